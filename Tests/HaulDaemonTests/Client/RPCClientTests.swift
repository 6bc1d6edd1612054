import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

@Suite struct RPCClientTests {
  @Test func callsAndErrors() async throws {
    let server = try await startServer()
    let client = try await RPCClient.connect(port: server.port, secret: "s3cret")
    let version = try await client.call("aria2.getVersion")
    let session = try await client.call("aria2.getSessionInfo")
    let wrong = try await RPCClient.connect(port: server.port, secret: "guess")
    await #expect(throws: RPCClient.Failure.rpc(.unauthorized)) { try await wrong.call("aria2.getVersion") }
    await #expect(throws: RPCClient.Failure.rpc(RPCError("No such method: aria2.nope"))) {
      try await client.call("aria2.nope")
    }
    await client.close()
    await wrong.close()
    await server.stop()
    #expect(version["version"] == .string(SessionMethods.aria2Version))
    #expect(session["sessionId"] == "0123")
  }

  @Test func noDaemonIsUnreachable() async throws {
    // Port 1: no test binds it. A port freed by a stopped server was once taken by another
    // test's server running at the same time, which answered 404.
    let port: UInt16 = 1
    let client = try await RPCClient.connect(port: port, secret: "s3cret", timeout: 5)
    await #expect(throws: RPCClient.Failure.unreachable("127.0.0.1:\(port)")) {
      try await client.call("aria2.getVersion")
    }
    await client.close()
  }

  @Test func manyCallsAtOnce() async throws {
    let server = try await startServer()
    let client = try await RPCClient.connect(port: server.port, secret: "s3cret")
    let results = try await withThrowingTaskGroup(of: JSONValue.self) { group in
      for _ in 0..<20 { group.addTask { try await client.call("aria2.getSessionInfo") } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    await client.close()
    await server.stop()
    #expect(results.count == 20)
    #expect(results.allSatisfy { $0["sessionId"] == "0123" })
  }
}
