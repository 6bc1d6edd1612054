import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

/// aria2's notifications reach every WebSocket client: start, pause, stop, complete, error.
@Suite struct Aria2NotificationTests {
  @Test func everyKindReachesAWebSocketClient() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/done.bin", size: 50_000, seed: 60)
    fixture.serve("/held.bin", size: 400_000, seed: 61, stallAfter: 100_000)
    let port = fixture.port
    let client = try await blocking { try WebSocketTestClient(port: port, timeout: 30) }
    // A first call answered means the session is registered for notifications.
    let hello = try await blocking {
      try client.send(
        #"{"jsonrpc":"2.0","id":0,"method":"aria2.getVersion","params":["token:\#(DaemonFixture.secret)"]}"#)
      return client.readJSON()
    }
    #expect(hello?["id"] == 0)

    let done = try #require(
      try await fixture.call("aria2.addUri", [[.string(fixture.server.url("/done.bin"))]]).string)
    _ = try await fixture.waitFor(done, status: "complete")
    let missing = try #require(
      try await fixture.call(
        "aria2.addUri", [[.string(fixture.server.url("/missing.bin"))], ["max-tries": "1"]]
      ).string)
    _ = try await fixture.waitFor(missing, status: "error")
    let held = try #require(
      try await fixture.call(
        "aria2.addUri", [[.string(fixture.server.url("/held.bin"))], ["timeout": "600"]]
      ).string)
    _ = try await fixture.waitFor(held, status: "active")
    #expect(try await fixture.call("aria2.pause", [.string(held)]) == .string(held))
    // The pause is announced once the run has stopped; only then is the removal a separate event.
    var (received, shapes) = try await notifications(on: client, until: ["aria2.onDownloadPause \(held)"])
    #expect(try await fixture.call("aria2.remove", [.string(held)]) == .string(held))
    let rest = try await notifications(on: client, until: ["aria2.onDownloadStop \(held)"])
    received.formUnion(rest.received)
    shapes += rest.shapes
    client.connection.close()
    await fixture.stop()
    let expected: Set<String> = [
      "aria2.onDownloadStart \(done)", "aria2.onDownloadComplete \(done)", "aria2.onDownloadStart \(missing)",
      "aria2.onDownloadError \(missing)", "aria2.onDownloadStart \(held)", "aria2.onDownloadPause \(held)",
      "aria2.onDownloadStop \(held)",
    ]
    #expect(expected.isSubset(of: received), "missing \(expected.subtracting(received))")
    for message in shapes {
      #expect(message["jsonrpc"] == "2.0")
      #expect(message["id"] == nil, "a notification has no id")
      #expect(message["params"]?.array?.count == 1)
    }
  }

  /// `haul rm` through the daemon's control socket is `DownloadManager.remove` (`haul.remove`):
  /// a download taken off before it stopped gets onDownloadStop, as with aria2.remove; a
  /// finished one taken off gets nothing more (its end was announced when it finished).
  @Test func takingAnUnfinishedDownloadOffTheCatalogIsAStop() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/done.bin", size: 50_000, seed: 62)
    fixture.serve("/held.bin", size: 400_000, seed: 63, stallAfter: 100_000)
    fixture.serve("/waits.bin", size: 50_000, seed: 64)
    let port = fixture.port
    let client = try await blocking { try WebSocketTestClient(port: port, timeout: 30) }
    let hello = try await blocking {
      try client.send(
        #"{"jsonrpc":"2.0","id":0,"method":"aria2.getVersion","params":["token:\#(DaemonFixture.secret)"]}"#)
      return client.readJSON()
    }
    #expect(hello?["id"] == 0)
    let done = try #require(
      try await fixture.call("aria2.addUri", [[.string(fixture.server.url("/done.bin"))]]).string)
    _ = try await fixture.waitFor(done, status: "complete")
    let held = try #require(
      try await fixture.call(
        "aria2.addUri", [[.string(fixture.server.url("/held.bin"))], ["timeout": "600"]]
      ).string)
    _ = try await fixture.waitFor(held, status: "active")
    let waits = try #require(
      try await fixture.call(
        "aria2.addUri", [[.string(fixture.server.url("/waits.bin"))], ["pause": "true"]]
      ).string)
    // The finished one first: a stop it wrongly got would come before those waited for.
    for gid in [done, held, waits] {
      try await fixture.daemon.manager.remove([try #require(DownloadID(gid))])
    }
    let (received, _) = try await notifications(
      on: client, until: ["aria2.onDownloadStop \(held)", "aria2.onDownloadStop \(waits)"])
    client.connection.close()
    await fixture.stop()
    #expect(received.contains("aria2.onDownloadStop \(held)"), "\(received)")
    #expect(received.contains("aria2.onDownloadStop \(waits)"), "\(received)")
    #expect(!received.contains("aria2.onDownloadStop \(done)"), "\(received)")
  }

  /// Over a WebSocket, the answer that carries a gid (addUri, unpause) comes before that gid's
  /// onDownloadStart, as aria2 sends them: a client learns the gid before it hears of it.
  @Test func anAnswerComesBeforeTheNotificationsItCaused() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/held.bin", size: 400_000, seed: 65, stallAfter: 100_000)
    let port = fixture.port
    let url = fixture.server.url("/held.bin")
    let token = "token:\(DaemonFixture.secret)"
    let early = try await blocking {
      let client = try WebSocketTestClient(port: port, timeout: 30)
      defer { client.connection.close() }
      var early: [String] = []
      /// Sends `method` and reads until its answer; the gid answered (or given) and what came first.
      func call(_ id: String, _ method: String, _ params: String) throws -> (String?, [JSONValue]) {
        try client.send(
          #"{"jsonrpc":"2.0","id":"\#(id)","method":"\#(method)","params":["\#(token)",\#(params)]}"#)
        var before: [JSONValue] = []
        while let message = client.readJSON() {
          if message["id"]?.string == id { return (message["result"]?.string, before) }
          before.append(message)
        }
        return (nil, before)
      }
      func startedEarly(_ gid: String?, _ before: [JSONValue]) -> Bool {
        before.contains {
          $0["method"]?.string == "aria2.onDownloadStart" && $0["params"]?.array?.first?["gid"]?.string == gid
        }
      }
      for round in 0..<8 {
        let (gid, before) = try call("a\(round)", "aria2.addUri", #"["\#(url)"],{"out":"a\#(round).bin"}"#)
        if startedEarly(gid, before) { early.append("addUri \(round)") }
        _ = try call("r\(round)", "aria2.forceRemove", #""\#(gid ?? "")""#)
      }
      for round in 0..<4 {
        let (gid, _) = try call(
          "p\(round)", "aria2.addUri", #"["\#(url)"],{"out":"p\#(round).bin","pause":"true"}"#)
        let (_, before) = try call("u\(round)", "aria2.unpause", #""\#(gid ?? "")""#)
        if startedEarly(gid, before) { early.append("unpause \(round)") }
        _ = try call("x\(round)", "aria2.forceRemove", #""\#(gid ?? "")""#)
      }
      return early
    }
    await fixture.stop()
    #expect(early.isEmpty, "onDownloadStart came before the answer: \(early)")
  }

  /// Reads notifications ("METHOD GID") until `wanted` came, the connection ends or its read
  /// timeout passes (a bound against hangs).
  private func notifications(on client: WebSocketTestClient, until wanted: Set<String>) async throws
    -> (received: Set<String>, shapes: [JSONValue])
  {
    try await blocking {
      var received: Set<String> = []
      var shapes: [JSONValue] = []
      while !wanted.isSubset(of: received), shapes.count < 100, let message = client.readJSON() {
        shapes.append(message)
        if let method = message["method"]?.string, let gid = message["params"]?.array?.first?["gid"]?.string {
          received.insert("\(method) \(gid)")
        }
      }
      return (received, shapes)
    }
  }
}
