import FoundationEssentials
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

@Suite struct WebSocketEndpointTests {
  @Test func handshakeAnswersRFC6455sExampleKey() async throws {
    let server = try await startServer()
    let handshake = try await blocking { try WebSocketTestClient(port: server.port).handshake }
    await server.stop()
    #expect(handshake.status == 101)
    #expect(handshake.header("Upgrade")?.lowercased() == "websocket")
    #expect(handshake.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
  }

  @Test func callsAreAnsweredInOrder() async throws {
    let server = try await startServer()
    let ids = try await blocking { () -> [JSONValue?] in
      let client = try WebSocketTestClient(port: server.port)
      for id in 1...5 {
        try client.send(
          #"{"jsonrpc":"2.0","id":\#(id),"method":"aria2.getSessionInfo","params":["token:s3cret"]}"#)
      }
      return (1...5).map { _ in client.readJSON()?["id"] }
    }
    await server.stop()
    #expect(ids == [1, 2, 3, 4, 5])
  }

  @Test func fragmentedMessagesAndPings() async throws {
    let server = try await startServer()
    let (pong, reply) = try await blocking { () -> ([UInt8]?, JSONValue?) in
      let client = try WebSocketTestClient(port: server.port)
      let text = Array(#"{"id":"f","method":"system.listMethods"}"#.utf8)
      try client.sendFrame(opcode: 1, Array(text[..<10]), fin: false)
      try client.sendFrame(opcode: 9, [1, 2, 3])
      try client.sendFrame(opcode: 0, Array(text[10...]))
      let pong = client.readFrame()
      return (pong?.opcode == 10 ? pong?.payload : nil, client.readJSON())
    }
    await server.stop()
    #expect(pong == [1, 2, 3])
    #expect(reply?["id"] == "f")
    #expect(reply?["result"]?.array?.contains("system.multicall") == true)
  }

  @Test func closeIsEchoed() async throws {
    let server = try await startServer()
    let close = try await blocking { () -> (UInt8, [UInt8])? in
      let client = try WebSocketTestClient(port: server.port)
      try client.sendFrame(opcode: 8, [0x03, 0xE8])
      return client.readFrame()
    }
    try await Task.sleep(for: .milliseconds(100))
    let counters = await server.counters()
    await server.stop()
    #expect(close?.0 == 8)
    #expect(close?.1 == [0x03, 0xE8])
    #expect(counters?.webSockets == 0)
  }

  @Test func protocolErrorsCloseWith1002AndTheServerGoesOn() async throws {
    let server = try await startServer()
    let close = try await blocking { () -> (UInt8, [UInt8])? in
      let client = try WebSocketTestClient(port: server.port)
      // Unmasked, as only a server may send.
      try client.connection.sendRaw([0x81, 0x02, 0x68, 0x69])
      return client.readFrame()
    }
    let after = try await post(port: server.port, #"{"id":1,"method":"system.listNotifications"}"#)
    await server.stop()
    #expect(close?.0 == 8)
    #expect(close.map { Array($0.1.prefix(2)) } == [0x03, 0xEA])
    #expect(after.status == 200)
  }

  @Test func oversizedMessagesClose1009() async throws {
    let server = try await startServer(configure: { $0.maximumRequestSize = 1024 })
    let close = try await blocking { () -> (UInt8, [UInt8])? in
      let client = try WebSocketTestClient(port: server.port)
      try client.send(String(repeating: "x", count: 2000))
      return client.readFrame()
    }
    await server.stop()
    #expect(close.map { Array($0.1.prefix(2)) } == [0x03, 0xF1])
  }

  @Test func malformedJSONIsAParseErrorOnTheSocket() async throws {
    let server = try await startServer()
    let reply = try await blocking { () -> JSONValue? in
      let client = try WebSocketTestClient(port: server.port)
      try client.send("{not json")
      return client.readJSON()
    }
    await server.stop()
    #expect(reply?["error"]?["code"] == -32700)
  }

  @Test func notificationsReachEveryClient() async throws {
    let server = try await startServer()
    let clients = try await blocking {
      Locked(try (0..<3).map { _ in try WebSocketTestClient(port: server.port) })
    }
    // The sessions exist once the server has answered a call on each.
    let ready = try await blocking {
      clients.withLock { clients in
        clients.map { client -> JSONValue? in
          try? client.send(#"{"id":0,"method":"system.listNotifications"}"#)
          return client.readJSON()?["id"]
        }
      }
    }
    #expect(ready == [0, 0, 0])
    server.notify("aria2.onDownloadStart", gid: "2089b05ecca3d829")
    let received = try await blocking { clients.withLock { $0.map { $0.readJSON() } } }
    await server.stop()
    for message in received {
      #expect(
        message == [
          "jsonrpc": "2.0", "method": "aria2.onDownloadStart", "params": [["gid": "2089b05ecca3d829"]],
        ])
    }
  }

  @Test func badHandshakesAreRefused() async throws {
    let server = try await startServer()
    let (version, key, path) = try await blocking {
      (
        try WebSocketTestClient(port: server.port, headers: [("Sec-WebSocket-Version", "8")]).handshake,
        try WebSocketTestClient(port: server.port, headers: [("Sec-WebSocket-Key", "c2hvcnQ=")]).handshake,
        try WebSocketTestClient(port: server.port, path: "/other").handshake
      )
    }
    await server.stop()
    #expect(version.status == 426)
    #expect(version.header("Sec-WebSocket-Version") == "13")
    #expect(key.status == 400)
    #expect(path.status == 404)
  }

  @Test func stoppingSaysGoingAway() async throws {
    let server = try await startServer()
    let client = try await blocking { try WebSocketTestClient(port: server.port) }
    _ = try await blocking { () -> JSONValue? in
      try client.send(#"{"id":0,"method":"system.listNotifications"}"#)
      return client.readJSON()
    }
    await server.stop()
    let close = try await blocking { client.readFrame() }
    #expect(close.map { Array($0.payload.prefix(2)) } == [0x03, 0xE9])
  }
}
