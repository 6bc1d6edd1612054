import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

/// aria2's methods through `RPCService.aria2` alone, without HTTP: what the control socket uses.
@Suite struct Aria2ServiceTests {
  /// A manager on a fresh catalog, its aria2 service, and a test server.
  final class Harness: Sendable {
    let directory: TemporaryDirectory
    let server: TestServer
    let manager: DownloadManager
    let service: RPCService
    var downloads: URL { directory.file("downloads") }

    init() throws {
      directory = try TemporaryDirectory()
      server = try TestServer()
      try FileManager.default.createDirectory(
        at: directory.file("downloads"), withIntermediateDirectories: false)
      manager = try DownloadManager(catalog: directory.file("catalog.sqlite"))
      service = RPCService.aria2(
        manager: manager, secret: "k", directory: directory.file("downloads").path, unauthorizedDelay: .zero)
    }

    deinit { server.stop() }

    /// One call with the token; its result, or the error it answered.
    func call(_ method: String, _ params: [JSONValue] = [], token: Bool = true) async throws -> JSONValue {
      let request = JSONValue.object(
        [
          "jsonrpc": "2.0", "id": 1, "method": .string(method),
          "params": .array((token ? ["token:k"] : []) + params),
        ])
      let reply = try #require(await service.reply(to: request.serialized))
      let json = try JSONValue.parse(reply)
      if let error = json["error"] {
        throw RPCError(code: error["code"]?.integer ?? 0, message: error["message"]?.string ?? "")
      }
      return json["result"] ?? .null
    }

    func add(
      _ path: String, size: Int, seed: UInt64, options: JSONObject = [:], faults: TestFaults = TestFaults()
    )
      async throws -> JSONValue
    {
      server.setResource(
        path,
        TestResource(body: TestResource.random(size: size, seed: seed), etag: "\"\(seed)\"", faults: faults))
      return try await call("aria2.addUri", [[.string(server.url(path))], .object(options)])
    }

    /// Polls until `gid` has `status`, at most a minute (a bound against hangs).
    func waitFor(_ gid: JSONValue, status: String) async throws -> JSONValue {
      let deadline = ContinuousClock.now + .seconds(60)
      while true {
        let entry = try await call("aria2.tellStatus", [gid])
        if entry["status"] == .string(status) { return entry }
        try #require(ContinuousClock.now < deadline, "\(gid) never became \(status): \(entry)")
        try await Task.sleep(for: .milliseconds(20))
      }
    }

    func close() async { await manager.close() }
  }

  @Test func aReplyIsBytesAndARequestWithoutIdIsRefused() async throws {
    let harness = try Harness()
    let reply = await harness.service.reply(
      to: Array(#"{"jsonrpc":"2.0","id":7,"method":"system.listNotifications"}"#.utf8))
    let withoutID = await harness.service.reply(
      to: Array(#"{"jsonrpc":"2.0","method":"aria2.getVersion","params":["token:k"]}"#.utf8))
    let malformed = await harness.service.reply(to: Array("{".utf8))
    await harness.close()
    let json = try JSONValue.parse(try #require(reply))
    #expect(json["id"] == 7)
    #expect(json["result"]?.array?.count == 5)
    #expect(try JSONValue.parse(try #require(withoutID))["error"]?["code"] == -32600)
    #expect(try JSONValue.parse(try #require(malformed))["error"]?["code"] == -32700)
  }

  @Test func forcePauseForceRemoveAndTheAllForms() async throws {
    let harness = try Harness()
    // Slow enough (1 MiB at 20 kB/s) that both are still running when paused on a loaded machine.
    let slow = TestFaults(bytesPerSecond: 20_000)
    let first = try await harness.add(
      "/p1", size: 1 << 20, seed: 1, options: ["timeout": "600"], faults: slow)
    let second = try await harness.add(
      "/p2", size: 1 << 20, seed: 2, options: ["timeout": "600"], faults: slow)
    _ = try await harness.waitFor(first, status: "active")
    #expect(try await harness.call("aria2.forcePause", [first]) == first)
    #expect(try await harness.call("aria2.pauseAll") == "OK")
    let paused = try await harness.call("aria2.tellWaiting", [0, 10, ["gid", "status"]])
    #expect(try await harness.call("aria2.unpauseAll") == "OK")
    let active = try await harness.waitFor(second, status: "active")
    let listed = try await harness.call("aria2.tellActive", [["gid"]])
    #expect(try await harness.call("aria2.forceRemove", [second]) == second)
    let removed = try await harness.waitFor(second, status: "removed")
    await #expect(throws: RPCError("Active Download not found for GID#\(second.string ?? "")")) {
      try await harness.call("aria2.forceRemove", [second])
    }
    await harness.close()
    #expect(paused.array?.map { $0["status"] } == ["paused", "paused"])
    #expect(active["gid"] == second)
    #expect(listed.array?.contains { $0["gid"] == second } == true)
    #expect(removed["errorCode"] == "31")
  }

  @Test func purgeForgetsEveryFinishedResult() async throws {
    let harness = try Harness()
    let done = try await harness.add("/d", size: 1000, seed: 3)
    _ = try await harness.waitFor(done, status: "complete")
    let cancelled = try await harness.add("/c", size: 1000, seed: 4, options: ["pause": "true"])
    _ = try await harness.call("aria2.remove", [cancelled])
    let kept = try await harness.add("/k", size: 1000, seed: 5, options: ["pause": "true"])
    #expect(try await harness.call("aria2.purgeDownloadResult") == "OK")
    let stopped = try await harness.call("aria2.tellStopped", [0, 10])
    let stat = try await harness.call("aria2.getGlobalStat")
    let waiting = try await harness.call("aria2.tellWaiting", [0, 10, ["gid"]])
    await harness.close()
    #expect(stopped == [])
    #expect(stat["numStopped"] == "0")
    #expect(stat["numStoppedTotal"] == "2")
    #expect(waiting == [["gid": kept]])
  }

  @Test func addUriPositionChecksumAndLimit() async throws {
    let harness = try Harness()
    let body = TestResource.random(size: 4000, seed: 6)
    harness.server.setResource("/sum", TestResource(body: body, etag: "\"6\""))
    let first = try await harness.add("/w1", size: 100, seed: 7, options: ["pause": "true"])
    let front = try await harness.call(
      "aria2.addUri",
      [[.string(harness.server.url("/sum"))], ["pause": "true", "max-download-limit": "100K"], 0])
    let order = try await harness.call("aria2.tellWaiting", [0, 10, ["gid"]])
    let options = try await harness.call("aria2.getOption", [front])
    let wrong = try await harness.call(
      "aria2.addUri",
      [
        [.string(harness.server.url("/sum"))],
        ["out": "wrong.bin", "checksum": .string("sha-256=" + String(repeating: "0", count: 64))],
      ])
    let failed = try await harness.waitFor(wrong, status: "error")
    await #expect(throws: RPCError("Position must be greater than or equal to 0.")) {
      try await harness.call("aria2.addUri", [[.string(harness.server.url("/sum"))], [:], -1])
    }
    await #expect(throws: RPCError("URI is not provided.")) { try await harness.call("aria2.addUri", [[]]) }
    await harness.close()
    #expect(order == [["gid": front], ["gid": first]])
    #expect(options["max-download-limit"] == "102400")
    #expect(failed["errorCode"] == "32")
    #expect(failed["errorMessage"]?.string?.isEmpty == false)
    #expect(
      !FileManager.default.fileExists(atPath: harness.downloads.appendingPathComponent("wrong.bin").path))
  }

  /// A file Haul did not make at the target: aria2's 13, told by the engine's cause, which
  /// reaches `tellStatus` through the manager's record.
  @Test func aFileAlreadyThereIsCode13() async throws {
    let harness = try Harness()
    harness.server.setResource(
      "/taken", TestResource(body: TestResource.random(size: 100, seed: 9), etag: "\"9\""))
    let taken = harness.downloads.appendingPathComponent("taken.bin")
    try Data("mine".utf8).write(to: taken)
    let gid = try await harness.call(
      "aria2.addUri", [[.string(harness.server.url("/taken"))], ["out": "taken.bin"]])
    let failed = try await harness.waitFor(gid, status: "error")
    await harness.close()
    #expect(failed["errorCode"] == "13", "\(failed)")
    #expect(try Data(contentsOf: taken) == Data("mine".utf8))
  }

  @Test func filesServersAndMulticall() async throws {
    let harness = try Harness()
    let gid = try await harness.add(
      "/f", size: 1 << 20, seed: 8, options: ["timeout": "600"], faults: TestFaults(stallAfterBytes: 100_000))
    _ = try await harness.waitFor(gid, status: "active")
    let files = try await harness.call("aria2.getFiles", [gid])
    let servers = try await harness.call("aria2.getServers", [gid])
    let multicall = try await harness.call(
      "system.multicall",
      [
        [
          ["methodName": "aria2.tellStatus", "params": ["token:k", gid, ["status"]]],
          ["methodName": "aria2.getVersion", "params": ["token:wrong"]],
          ["methodName": "aria2.nope", "params": ["token:k"]],
        ]
      ], token: false)
    _ = try await harness.call("aria2.forcePause", [gid])
    await #expect(throws: RPCError("No active download for GID#\(gid.string ?? "")")) {
      try await harness.call("aria2.getServers", [gid])
    }
    await harness.close()
    #expect(files.array?.first?["uris"] == [["uri": .string(harness.server.url("/f")), "status": "used"]])
    #expect(servers.array?.first?["servers"]?.array?.first?["uri"] == .string(harness.server.url("/f")))
    #expect(multicall.array?.first == [["status": "active"]])
    #expect(multicall.array?.dropFirst().first == ["code": 1, "message": "Unauthorized"])
    #expect(multicall.array?.last?["message"] == "No such method: aria2.nope")
  }

  /// aria2c's answers for an HTTP download: no peers while it is active or waiting, its error
  /// once it has stopped or for a gid it does not know (AriaNg asks for every download shown).
  @Test func getPeersAnswersAsAria2DoesForHTTP() async throws {
    let harness = try Harness()
    let active = try await harness.add(
      "/a", size: 1 << 20, seed: 9, options: ["timeout": "600"], faults: TestFaults(stallAfterBytes: 100_000))
    let paused = try await harness.add("/p", size: 1_000, seed: 10, options: ["pause": "true"])
    let done = try await harness.add("/d", size: 1_000, seed: 11)
    _ = try await harness.waitFor(active, status: "active")
    _ = try await harness.waitFor(done, status: "complete")
    let activePeers = try await harness.call("aria2.getPeers", [active])
    let pausedPeers = try await harness.call("aria2.getPeers", [paused])
    let listed = try await harness.call("system.listMethods", [], token: false)
    await #expect(throws: RPCError("No peer data is available for GID#\(done.string ?? "")")) {
      try await harness.call("aria2.getPeers", [done])
    }
    await #expect(throws: RPCError("GID 0000000000000001 is not found")) {
      try await harness.call("aria2.getPeers", ["0000000000000001"])
    }
    await #expect(throws: RPCError("The parameter at 0 is required but missing.")) {
      try await harness.call("aria2.getPeers", [])
    }
    await harness.close()
    #expect(activePeers == [])
    #expect(pausedPeers == [])
    #expect(listed.array?.contains("aria2.getPeers") == true)
  }
}
