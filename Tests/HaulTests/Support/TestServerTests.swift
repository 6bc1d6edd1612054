import Foundation
import HaulTestSupport
import Testing

@Suite struct TestServerTests {
  static let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"

  /// A server with a 1000-byte resource at `/file.bin`.
  func makeServer(faults: TestFaults = .init(), etag: String? = "\"v1\"") throws -> (TestServer, [UInt8]) {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 42)
    server.setResource(
      "/file.bin",
      TestResource(
        body: body, etag: etag, lastModified: Self.lastModified,
        contentDisposition: "attachment; filename=\"file.bin\"", faults: faults))
    return (server, body)
  }

  @Test func randomBytesAreDeterministic() {
    let a = TestResource.random(size: 1003, seed: 7)
    #expect(a.count == 1003)
    #expect(a == TestResource.random(size: 1003, seed: 7))
    #expect(a != TestResource.random(size: 1003, seed: 8))
    #expect(Array(TestResource.random(size: 2000, seed: 7).prefix(1003)) == a)
    #expect(TestResource.random(size: 0, seed: 1).isEmpty)
  }

  @Test func fullGet() throws {
    let (server, body) = try makeServer()
    let response = try rawHTTPGet(port: server.port, path: "/file.bin")
    #expect(response.status == 200)
    #expect(response.body == body)
    #expect(!response.closedEarly)
    #expect(response.header("content-length") == "1000")
    #expect(response.header("ETag") == "\"v1\"")
    #expect(response.header("Last-Modified") == Self.lastModified)
    #expect(response.header("Content-Disposition") == "attachment; filename=\"file.bin\"")
    #expect(response.header("Accept-Ranges") == "bytes")
    #expect(response.header("Content-Range") == nil)
    #expect(server.url("/a%20b") == "http://127.0.0.1:\(server.port)/a%20b")
    let recorded = server.requests(for: "/file.bin")
    #expect(recorded.count == 1)
    #expect(recorded.first?.method == "GET")
    #expect(recorded.first?.status == 200)
    #expect(recorded.first?.reply == .resource)
    #expect(recorded.first?.header("host") == "127.0.0.1:\(server.port)")
  }

  @Test func rangedGet() throws {
    let (server, body) = try makeServer()
    let cases: [(String, String, Range<Int>)] = [
      ("bytes=100-199", "bytes 100-199/1000", 100..<200),
      ("bytes=990-", "bytes 990-999/1000", 990..<1000),
      ("bytes=-10", "bytes 990-999/1000", 990..<1000),
      ("bytes=995-5000", "bytes 995-999/1000", 995..<1000),
      ("bytes=-5000", "bytes 0-999/1000", 0..<1000),
      ("bytes=0-0", "bytes 0-0/1000", 0..<1),
    ]
    for (range, contentRange, slice) in cases {
      let response = try rawHTTPGet(port: server.port, path: "/file.bin", headers: [("Range", range)])
      #expect(response.status == 206, "\(range)")
      #expect(response.header("Content-Range") == contentRange, "\(range)")
      #expect(response.header("Content-Length") == String(slice.count), "\(range)")
      #expect(response.body == Array(body[slice]), "\(range)")
    }
    // Several ranges, other units and bad syntax are ignored: 200 with everything.
    for range in ["bytes=0-1,5-6", "items=0-1", "bytes=5-1", "bytes=a-b"] {
      let response = try rawHTTPGet(port: server.port, path: "/file.bin", headers: [("Range", range)])
      #expect(response.status == 200, "\(range)")
      #expect(response.body == body, "\(range)")
    }
  }

  @Test func unsatisfiableRange() throws {
    let (server, _) = try makeServer()
    for range in ["bytes=1000-", "bytes=5000-6000", "bytes=-0"] {
      let response = try rawHTTPGet(port: server.port, path: "/file.bin", headers: [("Range", range)])
      #expect(response.status == 416, "\(range)")
      #expect(response.header("Content-Range") == "bytes */1000", "\(range)")
      #expect(response.body.isEmpty)
    }
  }

  @Test func ifRangeStrongETag() throws {
    let (server, body) = try makeServer()
    func get(_ ifRange: String) throws -> RawResponse {
      try rawHTTPGet(
        port: server.port, path: "/file.bin", headers: [("Range", "bytes=10-19"), ("If-Range", ifRange)])
    }
    let match = try get("\"v1\"")
    #expect(match.status == 206)
    #expect(match.body == Array(body[10..<20]))
    let mismatch = try get("\"v2\"")
    #expect(mismatch.status == 200)
    #expect(mismatch.body == body)
    // A weak tag never matches, even with the same opaque value.
    #expect(try get("W/\"v1\"").status == 200)
  }

  @Test func ifRangeWeakETagNeverMatches() throws {
    let (server, body) = try makeServer(etag: "W/\"x\"")
    let response = try rawHTTPGet(
      port: server.port, path: "/file.bin", headers: [("Range", "bytes=10-19"), ("If-Range", "W/\"x\"")])
    #expect(response.status == 200)
    #expect(response.body == body)
    #expect(response.header("ETag") == "W/\"x\"")
  }

  @Test func ifRangeDate() throws {
    let (server, body) = try makeServer()
    let match = try rawHTTPGet(
      port: server.port, path: "/file.bin",
      headers: [("Range", "bytes=10-19"), ("If-Range", Self.lastModified)])
    #expect(match.status == 206)
    #expect(match.body == Array(body[10..<20]))
    let mismatch = try rawHTTPGet(
      port: server.port, path: "/file.bin",
      headers: [("Range", "bytes=10-19"), ("If-Range", "Mon, 07 Nov 1994 08:49:37 GMT")])
    #expect(mismatch.status == 200)
    #expect(mismatch.body == body)
  }

  @Test func ignoreIfRangeFault() throws {
    let (server, body) = try makeServer(faults: TestFaults(ignoreIfRange: true))
    let response = try rawHTTPGet(
      port: server.port, path: "/file.bin", headers: [("Range", "bytes=10-19"), ("If-Range", "\"other\"")])
    #expect(response.status == 206)
    #expect(response.body == Array(body[10..<20]))
  }

  @Test func ignoreRangeFault() throws {
    let (server, body) = try makeServer(faults: TestFaults(ignoreRange: true))
    let response = try rawHTTPGet(port: server.port, path: "/file.bin", headers: [("Range", "bytes=10-19")])
    #expect(response.status == 200)
    #expect(response.body == body)
    #expect(response.header("Accept-Ranges") == nil)
  }

  @Test func dropAfterBytes() throws {
    let (server, body) = try makeServer(faults: TestFaults(dropAfterBytes: 300, dropTimes: 2))
    for _ in 0..<2 {
      let dropped = try rawHTTPGet(port: server.port, path: "/file.bin")
      #expect(dropped.status == 200)
      #expect(dropped.header("Content-Length") == "1000")
      #expect(dropped.closedEarly)
      #expect(!dropped.timedOut)
      #expect(dropped.body == Array(body[0..<300]))
    }
    let whole = try rawHTTPGet(port: server.port, path: "/file.bin")
    #expect(!whole.closedEarly)
    #expect(whole.body == body)
    #expect(server.requests(for: "/file.bin").map(\.faulted) == [true, true, false])
  }

  @Test func dropAppliesToRangedReplies() throws {
    let (server, body) = try makeServer(faults: TestFaults(dropAfterBytes: 50, dropTimes: 1))
    let response = try rawHTTPGet(port: server.port, path: "/file.bin", headers: [("Range", "bytes=500-")])
    #expect(response.status == 206)
    #expect(response.closedEarly)
    #expect(response.body == Array(body[500..<550]))
  }

  @Test func chunkedFraming() throws {
    let server = try TestServer()
    let body = TestResource.random(size: 10_000, seed: 3)
    server.setResource("/c", TestResource(body: body, faults: TestFaults(chunked: true)))
    let response = try rawHTTPGet(port: server.port, path: "/c")
    #expect(response.status == 200)
    #expect(response.isChunked)
    #expect(response.header("Content-Length") == nil)
    #expect(response.chunkSizes == [4096, 4096, 1808])
    #expect(response.body == body)
    #expect(!response.closedEarly)
    #expect(Array(response.rawBody.suffix(5)) == Array("0\r\n\r\n".utf8))
    #expect(Array(response.rawBody.prefix(6)) == Array("1000\r\n".utf8))
  }

  @Test func chunkedDropClosesMidChunk() throws {
    let server = try TestServer()
    let body = TestResource.random(size: 10_000, seed: 3)
    server.setResource(
      "/c", TestResource(body: body, faults: TestFaults(dropAfterBytes: 5000, chunked: true)))
    let response = try rawHTTPGet(port: server.port, path: "/c")
    #expect(response.closedEarly)
    #expect(response.body == Array(body[0..<5000]))
    #expect(response.chunkSizes == [4096, 4096])
  }

  @Test func contentRangeShiftAndWrongTotal() throws {
    let (server, body) = try makeServer(faults: TestFaults(contentRangeShift: 5, wrongTotal: 2000))
    let response = try rawHTTPGet(port: server.port, path: "/file.bin", headers: [("Range", "bytes=100-199")])
    #expect(response.status == 206)
    #expect(response.header("Content-Range") == "bytes 105-204/2000")
    #expect(response.body == Array(body[100..<200]))
    let unsatisfiable = try rawHTTPGet(
      port: server.port, path: "/file.bin", headers: [("Range", "bytes=1000-")])
    #expect(unsatisfiable.header("Content-Range") == "bytes */2000")
  }

  @Test func scriptedReplyThenNormal() throws {
    let (server, body) = try makeServer()
    server.enqueue("/file.bin", .status(503, headers: [("Retry-After", "2")], body: Array("busy".utf8)))
    server.enqueue("/file.bin", .status(429))
    let first = try rawHTTPGet(port: server.port, path: "/file.bin")
    #expect(first.status == 503)
    #expect(first.header("Retry-After") == "2")
    #expect(first.body == Array("busy".utf8))
    #expect(try rawHTTPGet(port: server.port, path: "/file.bin").status == 429)
    let normal = try rawHTTPGet(port: server.port, path: "/file.bin")
    #expect(normal.status == 200)
    #expect(normal.body == body)
    #expect(server.requests(for: "/file.bin").map(\.reply) == [.scripted, .scripted, .resource])
  }

  @Test func scriptedDropConnection() throws {
    let (server, _) = try makeServer()
    server.enqueue("/file.bin", .dropConnection)
    #expect(throws: RawHTTPError.self) { try rawHTTPGet(port: server.port, path: "/file.bin") }
    #expect(try rawHTTPGet(port: server.port, path: "/file.bin").status == 200)
    #expect(server.requests.map(\.status) == [nil, 200])
  }

  @Test func redirects() throws {
    let (server, _) = try makeServer()
    server.enqueue("/file.bin", .redirect(307, location: "/elsewhere"))
    let scripted = try rawHTTPGet(port: server.port, path: "/file.bin")
    #expect(scripted.status == 307)
    #expect(scripted.header("Location") == "/elsewhere")
    server.setRedirect("/old", to: server.url("/file.bin"))
    for _ in 0..<2 {
      let alias = try rawHTTPGet(port: server.port, path: "/old")
      #expect(alias.status == 302)
      #expect(alias.header("Location") == server.url("/file.bin"))
    }
    server.setRedirect("/moved", to: "/file.bin", status: 301)
    #expect(try rawHTTPGet(port: server.port, path: "/moved").status == 301)
  }

  @Test func headRequests() throws {
    let (server, _) = try makeServer()
    let head = try rawHTTPRequest(method: "HEAD", port: server.port, path: "/file.bin")
    #expect(head.status == 200)
    #expect(head.header("Content-Length") == "1000")
    #expect(head.header("ETag") == "\"v1\"")
    #expect(head.body.isEmpty)
    server.updateFaults("/file.bin") { $0.refuseHEAD = true }
    let refused = try rawHTTPRequest(method: "HEAD", port: server.port, path: "/file.bin")
    #expect(refused.status == 405)
    #expect(try rawHTTPGet(port: server.port, path: "/file.bin").status == 200)
  }

  @Test func notFoundAndQueryFallback() throws {
    let (server, body) = try makeServer()
    let missing = try rawHTTPGet(port: server.port, path: "/nope")
    #expect(missing.status == 404)
    #expect(!missing.body.isEmpty)
    let withQuery = try rawHTTPGet(port: server.port, path: "/file.bin?token=1")
    #expect(withQuery.status == 200)
    #expect(withQuery.body == body)
    #expect(server.requests(for: "/file.bin").count == 1)
    #expect(server.requests(for: "/file.bin?token=1").count == 1)
  }

  @Test func authorization() throws {
    let (server, _) = try makeServer(faults: TestFaults(requireAuthorization: "Bearer secret"))
    let denied = try rawHTTPGet(port: server.port, path: "/file.bin")
    #expect(denied.status == 401)
    #expect(denied.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
    let wrong = try rawHTTPGet(
      port: server.port, path: "/file.bin", headers: [("Authorization", "Bearer nope")])
    #expect(wrong.status == 401)
    let allowed = try rawHTTPGet(
      port: server.port, path: "/file.bin", headers: [("Authorization", "Bearer secret")])
    #expect(allowed.status == 200)
  }

  @Test func replacingResourceBetweenRequests() throws {
    let (server, _) = try makeServer()
    let newBody = TestResource.random(size: 500, seed: 99)
    server.setResource("/file.bin", TestResource(body: newBody, etag: "\"v2\""))
    // The client still holds "v1": the range no longer applies.
    let response = try rawHTTPGet(
      port: server.port, path: "/file.bin", headers: [("Range", "bytes=100-"), ("If-Range", "\"v1\"")])
    #expect(response.status == 200)
    #expect(response.header("ETag") == "\"v2\"")
    #expect(response.body == newBody)
  }

  @Test func keepAlive() throws {
    let (server, body) = try makeServer()
    let connection = try RawHTTPConnection(port: server.port)
    let first = try connection.request(path: "/file.bin", headers: [("Range", "bytes=0-9")])
    #expect(first.status == 206)
    #expect(first.body == Array(body[0..<10]))
    let second = try connection.request(path: "/file.bin")
    #expect(second.status == 200)
    #expect(second.body == body)
    let third = try connection.request(path: "/nope")
    #expect(third.status == 404)
    #expect(!connection.waitForClose(timeout: 0.05))
    let last = try connection.request(path: "/file.bin", headers: [("Connection", "close")])
    #expect(last.header("Connection") == "close")
    #expect(connection.waitForClose(timeout: 2))
    #expect(server.connectionCount == 1)
    #expect(Set(server.requests.map(\.connectionID)) == [1])
    #expect(server.requests.count == 4)
  }

  @Test func countsBodyBytesSent() throws {
    let (server, body) = try makeServer()
    #expect(server.bodyBytesSent == 0)
    let connection = try RawHTTPConnection(port: server.port)
    _ = try connection.request(path: "/file.bin", headers: [("Range", "bytes=0-9")])
    _ = try connection.request(method: "HEAD", path: "/file.bin")
    _ = try connection.request(path: "/file.bin")
    _ = try connection.request(path: "/nope")
    #expect(server.bodyBytesSent(for: "/file.bin") == 10 + body.count)
    #expect(server.bodyBytesSent == 10 + body.count)
    #expect(server.bodyBytesSent(for: "/nope") == 0)
  }

  @Test func stallThenStopReturnsPromptly() throws {
    let (server, body) = try makeServer(faults: TestFaults(stallAfterBytes: 100))
    let stalled = try rawHTTPGet(port: server.port, path: "/file.bin", timeout: 0.2)
    #expect(stalled.timedOut)
    #expect(stalled.closedEarly)
    #expect(stalled.body == Array(body[0..<100]))

    let connection = try RawHTTPConnection(port: server.port)
    try connection.send(path: "/file.bin")
    _ = connection.readBytes(atLeast: 1)
    let start = Date()
    server.stop()
    #expect(Date().timeIntervalSince(start) < 0.5)
    #expect(connection.waitForClose(timeout: 1))
    #expect(throws: RawHTTPError.self) { try rawHTTPGet(port: server.port, path: "/file.bin", timeout: 0.5) }
  }

  @Test func stopWhileThrottled() throws {
    let server = try TestServer()
    server.setResource(
      "/slow",
      TestResource(
        body: TestResource.random(size: 1 << 20, seed: 1), faults: TestFaults(bytesPerSecond: 10_000)))
    let connection = try RawHTTPConnection(port: server.port)
    try connection.send(path: "/slow")
    _ = connection.readBytes(atLeast: 1)
    let start = Date()
    server.stop()
    #expect(Date().timeIntervalSince(start) < 0.5)
    #expect(connection.waitForClose(timeout: 1))
  }

  @Test func throttlePacesTheBody() throws {
    let server = try TestServer()
    let body = TestResource.random(size: 40_000, seed: 5)
    server.setResource("/slow", TestResource(body: body, faults: TestFaults(bytesPerSecond: 200_000)))
    let start = Date()
    let response = try rawHTTPGet(port: server.port, path: "/slow")
    let elapsed = Date().timeIntervalSince(start)
    #expect(response.body == body)
    #expect(elapsed > 0.12)  // 4 slices of 10 000 bytes, 50 ms apart
    #expect(elapsed < 1)
  }

  @Test func survivesClientsThatVanish() throws {
    let server = try TestServer()
    let body = TestResource.random(size: 4 << 20, seed: 11)
    server.setResource("/big", TestResource(body: body))
    for _ in 0..<3 {
      let connection = try RawHTTPConnection(port: server.port)
      try connection.send(path: "/big")
      _ = connection.readBytes(atLeast: 1000)
      connection.close()
    }
    let half = try RawHTTPConnection(port: server.port)
    try half.sendRaw(Array("GET /big HTTP/1.1\r\nHo".utf8))
    half.close()
    let response = try rawHTTPGet(port: server.port, path: "/big")
    #expect(response.body == body)
  }
}
