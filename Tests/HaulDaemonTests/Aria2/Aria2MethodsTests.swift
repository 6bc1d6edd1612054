import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

@Suite struct Aria2MethodsTests {
  @Test func addUriDownloadsAndTellStatusHasAria2sShape() async throws {
    let fixture = try await DaemonFixture()
    let body = fixture.serve("/a.bin", size: 300_000, seed: 1)
    let gid = try await fixture.call("aria2.addUri", [[.string(fixture.server.url("/a.bin"))]])
    let status = try await fixture.waitFor(try #require(gid.string), status: "complete")
    await fixture.stop()
    #expect(gid.string?.count == 16)
    #expect(gid.string.flatMap(DownloadID.init) != nil)
    #expect(fixture.contents("a.bin") == body)
    for key in ["totalLength", "completedLength", "downloadSpeed", "uploadSpeed", "connections", "errorCode"]
    {
      #expect(status[key]?.string != nil, "\(key) is a string")
    }
    #expect(status["totalLength"] == "300000")
    #expect(status["completedLength"] == "300000")
    #expect(status["errorCode"] == "0")
    let file = try #require(status["files"]?.array?.first)
    #expect(file["index"] == "1")
    #expect(file["path"] == .string(fixture.downloads.appendingPathComponent("a.bin").path))
    #expect(file["uris"] == [["uri": .string(fixture.server.url("/a.bin")), "status": "used"]])
    #expect(status["dir"] == .string(fixture.downloads.path))
  }

  @Test func optionsOutDirAndKeys() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/b.bin", size: 10_000, seed: 2)
    let sub = fixture.downloads.appendingPathComponent("sub")
    try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: false)
    let gid = try await fixture.call(
      "aria2.addUri",
      [
        [.string(fixture.server.url("/b.bin"))],
        ["dir": .string(sub.path), "out": "renamed.bin", "split": "2"],
      ])
    _ = try await fixture.waitFor(try #require(gid.string), status: "complete")
    let picked = try await fixture.call("aria2.tellStatus", [gid, ["gid", "status"]])
    let options = try await fixture.call("aria2.getOption", [gid])
    await fixture.stop()
    #expect(picked.object?.keys.sorted() == ["gid", "status"])
    #expect(FileManager.default.fileExists(atPath: sub.appendingPathComponent("renamed.bin").path))
    #expect(options["out"] == "renamed.bin")
    #expect(options["split"] == "2")
  }

  @Test func aMissingDirIsMadeAsAria2cMakesIt() async throws {
    let fixture = try await DaemonFixture()
    let body = fixture.serve("/m.bin", size: 5_000, seed: 4)
    let url: JSONValue = [.string(fixture.server.url("/m.bin"))]
    let nested = fixture.downloads.appendingPathComponent("new/deeper")
    let first = try await fixture.call("aria2.addUri", [url, ["dir": .string(nested.path)]])
    // The global dir is made when a download is added there.
    let global = fixture.directory.file("global")
    #expect(try await fixture.call("aria2.changeGlobalOption", [["dir": .string(global.path)]]) == "OK")
    let second = try await fixture.call("aria2.addUri", [url, ["out": "sub/m.bin"]])
    // A file where a directory must go: a clear error, nothing added.
    try Data("x".utf8).write(to: fixture.directory.file("plain"))
    let inTheWay = fixture.directory.file("plain").appendingPathComponent("d").path
    await #expect(throws: RPCError("\(inTheWay) is not a directory: a part of it is a file")) {
      try await fixture.call("aria2.addUri", [url, ["dir": .string(inTheWay)]])
    }
    _ = try await fixture.waitFor(try #require(first.string), status: "complete")
    _ = try await fixture.waitFor(try #require(second.string), status: "complete")
    let listed = try await fixture.call("aria2.tellStopped", [0, 10, ["gid"]])
    await fixture.stop()
    #expect(try Data(contentsOf: nested.appendingPathComponent("m.bin")) == Data(body))
    #expect(try Data(contentsOf: global.appendingPathComponent("sub/m.bin")) == Data(body))
    #expect(listed.array?.count == 2)
  }

  /// The URL is checked before a missing `dir` is made: a refused call leaves no empty folder.
  @Test(arguments: [
    ("notaurl", "'notaurl' is not a URL"), ("gopher://h/x", "unsupported URL scheme 'gopher'"),
    ("http://", "'http://' has no usable host name"),
  ])
  func aRefusedURLMakesNoDir(uri: String, message: String) async throws {
    let fixture = try await DaemonFixture()
    let fresh = fixture.downloads.appendingPathComponent("fresh")
    await #expect(throws: RPCError(message)) {
      try await fixture.call(
        "aria2.addUri", [[.string(uri)], ["dir": .string(fresh.appendingPathComponent("deeper").path)]])
    }
    // Through the global dir, with out's subfolder, too.
    let global = fixture.directory.file("global")
    #expect(try await fixture.call("aria2.changeGlobalOption", [["dir": .string(global.path)]]) == "OK")
    await #expect(throws: RPCError(message)) {
      try await fixture.call("aria2.addUri", [[.string(uri)], ["out": "sub/m.bin"]])
    }
    let listed = try await fixture.call("aria2.tellWaiting", [0, 10, ["gid"]])
    await fixture.stop()
    #expect(!FileManager.default.fileExists(atPath: fresh.path))
    #expect(!FileManager.default.fileExists(atPath: global.path))
    #expect(listed.array?.isEmpty == true)
  }

  @Test func pauseUnpauseAndTheirErrors() async throws {
    let fixture = try await DaemonFixture()
    let body = fixture.serve("/c.bin", size: 200_000, seed: 3)
    let gid = try await fixture.call(
      "aria2.addUri", [[.string(fixture.server.url("/c.bin"))], ["pause": "true"]])
    let paused = try await fixture.call("aria2.tellStatus", [gid, ["status"]])
    await #expect(throws: RPCError("GID#\(gid.string ?? "") cannot be paused now")) {
      try await fixture.call("aria2.pause", [gid])
    }
    #expect(try await fixture.call("aria2.unpause", [gid]) == gid)
    _ = try await fixture.waitFor(try #require(gid.string), status: "complete")
    await #expect(throws: RPCError("GID#\(gid.string ?? "") cannot be unpaused now")) {
      try await fixture.call("aria2.unpause", [gid])
    }
    await fixture.stop()
    #expect(paused["status"] == "paused")
    #expect(fixture.contents("c.bin") == body)
  }

  @Test func waitingQueueOrderAndPagination() async throws {
    let fixture = try await DaemonFixture()
    var gids: [JSONValue] = []
    for index in 0..<4 {
      fixture.serve("/q\(index)", size: 1000, seed: UInt64(10 + index))
      gids.append(
        try await fixture.call(
          "aria2.addUri", [[.string(fixture.server.url("/q\(index)"))], ["pause": "true"]]))
    }
    let first = try await fixture.call("aria2.tellWaiting", [0, 2, ["gid"]])
    let last = try await fixture.call("aria2.tellWaiting", [-1, 2, ["gid"]])
    let moved = try await fixture.call("aria2.changePosition", [gids[3], 0, "POS_SET"])
    let afterMove = try await fixture.call("aria2.tellWaiting", [0, 10, ["gid"]])
    let up = try await fixture.call("aria2.changePosition", [gids[2], -1, "POS_CUR"])
    await #expect(throws: RPCError("Illegal argument.")) {
      try await fixture.call("aria2.changePosition", [gids[0], 0, "POS_X"])
    }
    await fixture.stop()
    #expect(first.array?.map { $0["gid"] } == [gids[0], gids[1]])
    #expect(last.array?.map { $0["gid"] } == [gids[3], gids[2]])
    #expect(moved == 0)
    #expect(afterMove.array?.map { $0["gid"] } == [gids[3], gids[0], gids[1], gids[2]])
    #expect(up == 2)
  }

  @Test func removeAndTheStoppedList() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/r.bin", size: 1000, seed: 20)
    let gid = try await fixture.call(
      "aria2.addUri", [[.string(fixture.server.url("/r.bin"))], ["pause": "true"]])
    #expect(try await fixture.call("aria2.remove", [gid]) == gid)
    let removed = try await fixture.call("aria2.tellStatus", [gid])
    let stopped = try await fixture.call("aria2.tellStopped", [0, 10])
    let stat = try await fixture.call("aria2.getGlobalStat")
    #expect(try await fixture.call("aria2.removeDownloadResult", [gid]) == "OK")
    await #expect(throws: RPCError("GID \(gid.string ?? "") is not found")) {
      try await fixture.call("aria2.tellStatus", [gid])
    }
    let after = try await fixture.call("aria2.getGlobalStat")
    await fixture.stop()
    #expect(removed["status"] == "removed")
    #expect(removed["errorCode"] == "31")
    #expect(stopped.array?.map { $0["gid"] } == [gid])
    #expect(stat["numStopped"] == "1")
    #expect(after["numStopped"] == "0")
    #expect(after["numStoppedTotal"] == "1")
  }

  @Test func gidsAreCheckedAsAria2ChecksThem() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/g.bin", size: 1000, seed: 30)
    let gid = try #require(
      try await fixture.call("aria2.addUri", [[.string(fixture.server.url("/g.bin"))], ["pause": "true"]])
        .string)
    let byPrefix = try await fixture.call("aria2.tellStatus", [.string(String(gid.prefix(6))), ["gid"]])
    await #expect(throws: RPCError("Invalid GID xyz")) { try await fixture.call("aria2.tellStatus", ["xyz"]) }
    await #expect(throws: RPCError("GID 0000000000000001 is not found")) {
      try await fixture.call("aria2.tellStatus", ["0000000000000001"])
    }
    await #expect(throws: RPCError("The parameter at 0 is required but missing.")) {
      try await fixture.call("aria2.tellStatus")
    }
    await #expect(throws: RPCError("The parameter at 0 has wrong type.")) {
      try await fixture.call("aria2.tellStatus", [5])
    }
    await fixture.stop()
    #expect(byPrefix["gid"] == .string(gid))
  }

  @Test func globalOptionsAndLimits() async throws {
    let fixture = try await DaemonFixture()
    #expect(
      try await fixture.call(
        "aria2.changeGlobalOption", [["max-concurrent-downloads": "2", "max-overall-download-limit": "1M"]])
        == "OK")
    let global = try await fixture.call("aria2.getGlobalOption")
    await fixture.stop()
    #expect(global["max-concurrent-downloads"] == "2")
    #expect(global["max-overall-download-limit"] == "1048576")
    #expect(global["dir"] == .string(fixture.downloads.path))
    #expect(fixture.daemon.manager.maxConcurrentDownloads == 2)
    #expect(fixture.daemon.manager.overallRateLimit == 1 << 20)
  }

  /// The options aria2 always lists and Haul has a default for are listed with Haul's defaults
  /// (AriaNg showed blanks), the same a download added without options has, and writing them
  /// back (as AriaNg does) changes nothing.
  @Test func globalOptionsListHaulsDefaults() async throws {
    let fixture = try await DaemonFixture()
    let before = try await fixture.call("aria2.getGlobalOption")
    let written = JSONValue.object(
      JSONObject(
        ["max-tries", "timeout", "user-agent"].map { ($0, before[$0] ?? .null) }))
    #expect(try await fixture.call("aria2.changeGlobalOption", [written]) == "OK")
    let after = try await fixture.call("aria2.getGlobalOption")
    let gid = try await fixture.call("aria2.addUri", [["http://127.0.0.1:9/a.bin"], ["pause": "true"]])
    let download = try await fixture.call("aria2.getOption", [gid])
    await fixture.stop()
    let engine = DownloadOptions()
    #expect(before["max-tries"] == .string(String(engine.maxAttemptsWithoutProgress)))
    #expect(before["timeout"] == .string(String(Int(engine.stallTimeout))))
    #expect(before["user-agent"] == .string(engine.userAgent))
    for key in ["max-tries", "timeout", "user-agent"] {
      #expect(after[key] == before[key], "\(key) read back unchanged")
      #expect(download[key] == before[key], "\(key) is what a download gets")
    }
    // Connections are automatic unless asked for: no number is made up for them.
    #expect(before["split"] == nil && before["max-connection-per-server"] == nil)
  }

  @Test func changeOptionAndChangeUri() async throws {
    let fixture = try await DaemonFixture()
    let body = fixture.serve("/old.bin", size: 5000, seed: 40)
    fixture.server.setResource("/new.bin", TestResource(body: body, etag: "\"40\""))
    let gid = try await fixture.call(
      "aria2.addUri", [[.string(fixture.server.url("/old.bin"))], ["pause": "true"]])
    #expect(try await fixture.call("aria2.changeOption", [gid, ["max-download-limit": "500K"]]) == "OK")
    let options = try await fixture.call("aria2.getOption", [gid])
    let changed = try await fixture.call(
      "aria2.changeUri",
      [gid, 1, [.string(fixture.server.url("/old.bin"))], [.string(fixture.server.url("/new.bin"))]])
    let uris = try await fixture.call("aria2.getUris", [gid])
    await #expect(throws: RPCError("fileIndex is out of range")) {
      try await fixture.call("aria2.changeUri", [gid, 2, [], []])
    }
    await fixture.stop()
    #expect(options["max-download-limit"] == "512000")
    #expect(changed == [1, 1])
    // Paused before it ever started: its URL is not used yet (aria2c says "waiting").
    #expect(uris == [["uri": .string(fixture.server.url("/new.bin")), "status": "waiting"]])
  }

  @Test func unsupportedAndSessionMethods() async throws {
    let fixture = try await DaemonFixture()
    await #expect(throws: RPCError("BitTorrent is not supported by haul daemon.")) {
      try await fixture.call("aria2.addTorrent", ["x"])
    }
    let methods = try await fixture.call("system.listMethods")
    let version = try await fixture.call("aria2.getVersion")
    let session = try await fixture.call("aria2.getSessionInfo")
    #expect(try await fixture.call("aria2.saveSession") == "OK")
    #expect(try await fixture.call("aria2.shutdown") == "OK")
    await fixture.daemon.waitForShutdownRequest()
    await fixture.stop()
    #expect(methods.array?.contains("aria2.addUri") == true)
    #expect(methods.array?.contains("aria2.addTorrent") == false)
    // aria2 1.36's 36 but addTorrent and addMetalink (refused, so not listed).
    #expect(methods.array?.count == 34)
    #expect(methods.array?.contains("aria2.getPeers") == true)
    #expect(version["version"] == .string(SessionMethods.aria2Version))
    #expect(session["sessionId"]?.string?.count == 40)
  }
}
