import FoundationEssentials
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

@Suite struct HTTPEndpointTests {
  private let version = #"{"jsonrpc":"2.0","id":"q","method":"aria2.getVersion","params":["token:s3cret"]}"#

  @Test func postAnswersWithAria2sShape() async throws {
    let server = try await startServer()
    let response = try await post(port: server.port, version)
    await server.stop()
    #expect(response.status == 200)
    #expect(response.header("Content-Type") == "application/json-rpc")
    #expect(response.json?["id"] == "q")
    #expect(response.json?["jsonrpc"] == "2.0")
    #expect(response.json?["result"]?["version"] == .string(SessionMethods.aria2Version))
    #expect(response.text.hasPrefix(#"{"id":"q","jsonrpc":"2.0","result":"#))
  }

  @Test func listensOnBothLoopbacks() async throws {
    let server = try await startServer()
    await server.stop()
    #expect(server.addresses.first == "127.0.0.1")
    // ::1 where the machine has IPv6.
    #expect(server.addresses + server.unavailableAddresses == ["127.0.0.1", "::1"])
  }

  @Test func keepAliveServesSeveralRequestsOnOneConnection() async throws {
    let server = try await startServer()
    let statuses = try await blocking { [version] in
      let connection = try RawHTTPConnection(port: Int(server.port))
      defer { connection.close() }
      return try (0..<3).map { _ in
        try connection.send(
          method: "POST", path: "/jsonrpc", headers: [("Content-Length", "\(version.utf8.count)")])
        try connection.sendRaw(Array(version.utf8))
        return try connection.readResponse(method: "POST").status
      }
    }
    await server.stop()
    #expect(statuses == [200, 200, 200])
  }

  @Test func wrongOrMissingTokenIsUnauthorizedAfterADelay() async throws {
    let server = try await startServer(unauthorizedDelay: .milliseconds(300))
    let clock = ContinuousClock()
    let start = clock.now
    let wrong = try await post(
      port: server.port, #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:guess"]}"#)
    let elapsed = clock.now - start
    let missing = try await post(port: server.port, #"{"jsonrpc":"2.0","id":2,"method":"aria2.getVersion"}"#)
    await server.stop()
    for response in [wrong, missing] {
      #expect(response.status == 400)
      #expect(response.json?["error"] == ["code": 1, "message": "Unauthorized"])
    }
    #expect(elapsed >= .milliseconds(300))
  }

  @Test func malformedJSONIsAParseError() async throws {
    let server = try await startServer()
    let response = try await post(port: server.port, #"{"jsonrpc":"2.0","id":1,"method":"#)
    await server.stop()
    #expect(response.status == 500)
    #expect(response.text == #"{"id":null,"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error."}}"#)
  }

  @Test func unknownMethodsAreAria2sError() async throws {
    let server = try await startServer()
    let response = try await post(
      port: server.port, #"{"id":1,"method":"aria2.fly","params":["token:s3cret"]}"#)
    await server.stop()
    #expect(response.status == 400)
    #expect(response.json?["error"]?["message"] == "No such method: aria2.fly")
  }

  @Test func batchesAndNotifications() async throws {
    let server = try await startServer()
    let batch = try await post(
      port: server.port,
      #"[{"id":1,"method":"system.listNotifications"},{"method":"aria2.getVersion","params":["token:s3cret"]},7]"#
    )
    let onlyNotification = try await post(
      port: server.port, #"{"method":"aria2.getSessionInfo","params":["token:s3cret"]}"#)
    await server.stop()
    #expect(batch.status == 200)
    #expect(batch.json?.array?.count == 2)
    #expect(batch.json?.array?.first?["result"]?.array?.count == 5)
    #expect(batch.json?.array?.last?["error"]?["code"] == -32600)
    // aria2c: a request without id is refused, not run.
    #expect(onlyNotification.status == 400)
    #expect(onlyNotification.json?["error"]?["code"] == -32600)
  }

  @Test func getFormWithBase64ParamsAndJSONP() async throws {
    let server = try await startServer()
    let params = Data(#"["token:s3cret"]"#.utf8).base64EncodedString().replacingOccurrences(
      of: "=", with: "%3D")
    let plain = try await request(
      "GET", port: server.port, path: "/jsonrpc?method=aria2.getSessionInfo&id=g1&params=\(params)")
    let jsonp = try await request(
      "GET", port: server.port,
      path: "/jsonrpc?method=aria2.getSessionInfo&id=g2&params=\(params)&jsoncallback=cb")
    let evil = try await request(
      "GET", port: server.port, path: "/jsonrpc?method=m&id=1&jsoncallback=alert(1)")
    await server.stop()
    #expect(plain.json?["result"]?["sessionId"] == "0123")
    #expect(jsonp.header("Content-Type") == "text/javascript")
    #expect(jsonp.text == #"cb({"id":"g2","jsonrpc":"2.0","result":{"sessionId":"0123"}})"#)
    #expect(evil.status == 400)
  }

  @Test func otherPathsAndMethodsAreRefused() async throws {
    let server = try await startServer()
    let path = try await post(port: server.port, version, path: "/rpc")
    let put = try await request("PUT", port: server.port, path: "/jsonrpc")
    await server.stop()
    #expect(path.status == 404)
    #expect(put.status == 501)
  }

  @Test func hostsThatCouldBeReboundAreRefused() async throws {
    let server = try await startServer()
    let evil = try await post(port: server.port, version, headers: [("Host", "attacker.example:6800")])
    let named = try await post(port: server.port, version, headers: [("Host", "localhost:\(server.port)")])
    let v6 = try await post(port: server.port, version, headers: [("Host", "[::1]:\(server.port)")])
    await server.stop()
    #expect(evil.status == 421)
    #expect(evil.text.contains("attacker.example"))
    #expect(named.status == 200)
    #expect(v6.status == 200)
  }

  @Test func corsIsSilentByDefault() async throws {
    let server = try await startServer()
    let preflight = try await request(
      "OPTIONS", port: server.port, path: "/jsonrpc",
      headers: [("Origin", "https://ui.example"), ("Access-Control-Request-Method", "POST")])
    let reply = try await post(port: server.port, version, headers: [("Origin", "https://ui.example")])
    await server.stop()
    #expect(preflight.status == 200)
    #expect(preflight.header("Access-Control-Allow-Origin") == nil)
    #expect(preflight.header("Access-Control-Allow-Methods") == nil)
    #expect(reply.header("Access-Control-Allow-Origin") == nil)
  }

  @Test func corsForAnyOriginWhenAllowed() async throws {
    let server = try await startServer(configure: { $0.allowAnyOrigin = true })
    let preflight = try await request(
      "OPTIONS", port: server.port, path: "/jsonrpc",
      headers: [
        ("Origin", "https://ui.example"), ("Access-Control-Request-Method", "POST"),
        ("Access-Control-Request-Headers", "content-type"),
      ])
    let unauthorized = try await post(
      port: server.port, #"{"id":1,"method":"aria2.getVersion"}"#, headers: [("Origin", "https://ui.example")]
    )
    await server.stop()
    #expect(preflight.header("Access-Control-Allow-Origin") == "*")
    #expect(preflight.header("Access-Control-Allow-Methods") == "POST, GET, OPTIONS")
    #expect(preflight.header("Access-Control-Allow-Headers") == "content-type")
    // A page may read the answer, but without the token it is only "Unauthorized".
    #expect(unauthorized.header("Access-Control-Allow-Origin") == "*")
    #expect(unauthorized.json?["error"]?["message"] == "Unauthorized")
  }
}
