import FoundationEssentials
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct LimitTests {
  private let version = #"{"jsonrpc":"2.0","id":"q","method":"aria2.getVersion","params":["token:s3cret"]}"#

  @Test func hugeBodiesAreRefusedWithoutReadingThem() async throws {
    let server = try await startServer(configure: { $0.maximumRequestSize = 64 << 10 })
    let response = try await blocking {
      let connection = try RawHTTPConnection(port: Int(server.port))
      defer { connection.close() }
      try connection.send(method: "POST", path: "/jsonrpc", headers: [("Content-Length", "\(100 << 20)")])
      return try connection.readResponse(method: "POST")
    }
    let after = try await post(port: server.port, version)
    await server.stop()
    #expect(response.status == 413)
    #expect(after.status == 200)
  }

  @Test func aBodyJustUnderTheLimitIsServed() async throws {
    let server = try await startServer()
    let padding = String(repeating: "x", count: (2 << 20) - 200)
    let body =
      #"{"jsonrpc":"2.0","id":"q","method":"aria2.getVersion","params":["token:s3cret",""# + padding + #""]}"#
    let response = try await post(port: server.port, body)
    await server.stop()
    #expect(response.status == 200)
  }

  @Test func hugeHeadersCloseTheConnection() async throws {
    let server = try await startServer(configure: { $0.maximumHeaderSize = 4096 })
    let closed = try await blocking {
      let connection = try RawHTTPConnection(port: Int(server.port))
      defer { connection.close() }
      try connection.send(
        method: "POST", path: "/jsonrpc", headers: [("X-Padding", String(repeating: "a", count: 8192))])
      return connection.waitForClose(timeout: 5)
    }
    let after = try await post(port: server.port, version)
    await server.stop()
    #expect(closed)
    #expect(after.status == 200)
  }

  @Test func aClientTricklingItsRequestIsCut() async throws {
    let server = try await startServer(configure: { $0.requestTimeout = 1 })
    let closedAfter = try await blocking {
      let connection = try RawHTTPConnection(port: Int(server.port))
      defer { connection.close() }
      let start = ContinuousClock.now
      // One header byte every 0.2 s: evhttp's read timeout alone would never fire.
      for byte in Array("POST /jsonrpc HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8) {
        guard (try? connection.sendRaw([byte])) != nil else { break }
        if connection.waitForClose(timeout: 0.2) { break }
      }
      return ContinuousClock.now - start
    }
    await server.stop()
    // Cut by the sweep after the timeout, not after the 40 bytes (8 s) were all sent.
    #expect(closedAfter < .seconds(6))
  }

  @Test func pastTheLimitTheOldestIdleConnectionsMakeRoom() async throws {
    let server = try await startServer(configure: { $0.maximumConnections = 8 })
    let connections = try await blocking {
      Locked(try (0..<20).map { _ in try RawHTTPConnection(port: Int(server.port)) })
    }
    let response = try await post(port: server.port, version)
    let counters = await server.counters()
    await server.stop()
    connections.withLock { $0.forEach { $0.close() } }
    #expect(response.status == 200)
    #expect((counters?.evicted ?? 0) >= 12)
  }

  /// 300 here, in the test process (both ends of each connection are in it, beside every other
  /// test's); the thousand of the issue are held against the real daemon in DaemonEndToEndTests.
  @Test func hundredsOfIdleConnectionsDoNotKeepOthersOut() async throws {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    let needed: rlim_t = 2200
    if limit.rlim_cur < needed {
      limit.rlim_cur = min(needed, limit.rlim_max)
      setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    try #require(limit.rlim_cur >= needed, "this machine allows only \(limit.rlim_cur) open files")
    // Idle connections are closed after requestTimeout (30 s); a loaded machine under a
    // sanitizer can take that long to open 300, and then finds fewer than it opened.
    let server = try await startServer(configure: { $0.requestTimeout = 600 })
    let idle = try await blocking {
      Locked(try (0..<300).map { _ in try RawHTTPConnection(port: Int(server.port)) })
    }
    var statuses: [Int] = []
    for _ in 0..<5 { statuses.append(try await post(port: server.port, version).status) }
    let counters = await server.counters()
    await server.stop()
    idle.withLock { $0.forEach { $0.close() } }
    #expect(statuses == [200, 200, 200, 200, 200])
    #expect((counters?.connections ?? 0) >= 300)
  }

  @Test func deepNestingAndManyValuesAreParseErrors() async throws {
    let server = try await startServer()
    let deep = try await post(port: server.port, String(repeating: "[", count: 50_000))
    let many = try await post(
      port: server.port, "[" + Array(repeating: "1", count: 300_000).joined(separator: ",") + "]")
    await server.stop()
    #expect(deep.json?["error"]?["code"] == -32700)
    #expect(many.json?["error"]?["code"] == -32700)
  }
}
