import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The control socket of the process that owns a catalog: made private, answering JSON-RPC
/// lines with aria2's method names, replaced when a killed owner left it, removed at the end,
/// and never made over something else.
@Suite("control socket")
struct ControlSocketTests {
  private func socketInfo(_ path: String) -> stat? {
    var info = stat()
    return lstat(path, &info) == 0 ? info : nil
  }

  /// `haul run` on one slow download, once its control socket is there.
  private func startRunner(_ fixture: CatalogFixture, _ server: TestServer) async throws -> ChildProcess {
    let runner = try fixture.start("run", ["--json"])
    // Bounds a hang (the runner's downloads last far less); nothing is timed by it.
    runner.signal(SIGKILL, after: 600)
    let socket = fixture.catalog.path + ".sock"
    try await CatalogFixture.waitUntil("the control socket answers") {
      (try? UnixSocketClient(path: socket)) != nil
    }
    return runner
  }

  @Test func theOwnerAnswersOnAPrivateSocketAndRemovesItAtTheEnd() async throws {
    let server = try TestServer()
    // Two: while one is paused, the other keeps the runner running.
    let files = ServedFile.serve(2, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 90)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url))
    let id = ids[0]
    let runner = try await startRunner(fixture, server)
    let path = fixture.catalog.path + ".sock"
    let info = try #require(socketInfo(path))
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(info.st_uid == geteuid())
    // Nothing of the private directory it was made in is left.
    let entries = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path)
    #expect(!entries.contains { $0.hasPrefix(".catalog.sqlite.sock.") }, "\(entries)")

    let client = try UnixSocketClient(path: path)
    let methods = try #require(
      try client.call(#"{"jsonrpc":"2.0","id":1,"method":"system.listMethods"}"#) as? [String: Any])
    #expect(methods["id"] as? Int == 1)
    #expect((methods["result"] as? [String])?.contains("aria2.getVersion") == true, "\(methods)")
    // No token on the socket: the peer is the catalog's own user.
    let version = try #require(
      try client.call(#"{"jsonrpc":"2.0","id":"v","method":"aria2.getVersion","params":[]}"#)
        as? [String: Any])
    #expect((version["result"] as? [String: Any])?["version"] as? String != nil, "\(version)")
    let batch = try #require(
      try client.call(
        #"[{"jsonrpc":"2.0","id":2,"method":"aria2.getVersion"},{"jsonrpc":"2.0","id":3,"method":"no.such"}]"#
      )
        as? [[String: Any]])
    #expect(batch.count == 2)
    // aria2's answer to an unknown method: code 1, "No such method: …".
    let unknown = batch[1]["error"] as? [String: Any]
    #expect(
      unknown?["code"] as? Int == 1 && (unknown?["message"] as? String)?.hasPrefix("No such method") == true)
    let garbage = try #require(try client.call("{not json") as? [String: Any])
    #expect((garbage["error"] as? [String: Any])?["code"] as? Int == -32700)
    // Blank lines (empty, or spaces and a `\r`) are no requests: skipped, not answered.
    let request = #"{"jsonrpc":"2.0","id":"b","method":"aria2.getVersion"}"#
    let afterBlanks = try #require(try client.call("\n \r\n" + request) as? [String: Any])
    #expect(afterBlanks["id"] as? String == "b", "\(afterBlanks)")

    // aria2's own methods, as haul daemon serves them: the runner's downloads by gid.
    try await CatalogFixture.waitUntil("both downloads are active") {
      try await fixture.list().allSatisfy { $0["state"] == "active" }
    }
    let active = try #require(
      try client.call(#"{"jsonrpc":"2.0","id":4,"method":"aria2.tellActive","params":[["gid","status"]]}"#)
        as? [String: Any])
    let statuses = try #require(active["result"] as? [[String: Any]], "\(active)")
    #expect(Set(statuses.compactMap { $0["gid"] as? String }) == Set(ids), "\(statuses)")
    #expect(statuses.allSatisfy { $0["status"] as? String == "active" }, "\(statuses)")
    let paused = try #require(
      try client.call(#"{"jsonrpc":"2.0","id":5,"method":"aria2.pause","params":["\#(id)"]}"#)
        as? [String: Any])
    #expect(paused["result"] as? String == id, "\(paused)")
    #expect(try await fixture.download(id)?["state"] == "paused")
    #expect(try await fixture.run("resume", [id]).status == 0)

    // aria2.shutdown stops the runner as SIGTERM does: everything kept, exit 130.
    let shutdown = try #require(
      try client.call(#"{"jsonrpc":"2.0","id":6,"method":"aria2.shutdown"}"#) as? [String: Any])
    #expect(shutdown["result"] as? String == "OK", "\(shutdown)")
    let outcome = await runner.wait()
    #expect(outcome.status == 130, "\(outcome)")
    #expect(socketInfo(path) == nil, "the socket is removed when the owner ends")
    #expect(
      try await fixture.download(id)?["state"] == "queued", "stopped, not paused: the next run continues it")
  }

  /// The catalog records no speed: while a process owns it, `haul ls` shows the speeds that
  /// process measures; without one (killed), `-`.
  @Test func lsShowsTheOwnersLiveSpeeds() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 3_000_000, on: server, bytesPerSecond: 50_000, seed: 94)
    let fixture = try CatalogFixture()
    let id = try #require(try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url)).first)
    let runner = try await startRunner(fixture, server)
    try await CatalogFixture.waitUntil("ls --json shows a speed", seconds: 30) {
      Double(try await fixture.download(id)?["bytes_per_second"] ?? "") ?? 0 > 0
    }
    let table = try await fixture.run("ls")
    let row = table.stdout.split(separator: "\n").first { $0.hasPrefix(id) }.map(String.init) ?? ""
    runner.signal(SIGKILL)
    _ = await runner.wait()
    let orphaned = try await fixture.run("ls")
    let stale = orphaned.stdout.split(separator: "\n").first { $0.hasPrefix(id) }.map(String.init) ?? ""
    let listed = try await fixture.download(id)
    #expect(table.status == 0, "\(table)")
    #expect(row.contains("active") && row.contains("B/s"), "\(table.stdout)")
    // Killed: no process measures a speed (and a catalog no process owns lists none active).
    #expect(!stale.contains("B/s"), "\(orphaned.stdout)")
    #expect(stale.split(separator: " ", omittingEmptySubsequences: true).dropLast().last == "-", "\(stale)")
    #expect(listed?["bytes_per_second"] == "0", "\(String(describing: listed))")
  }

  @Test func aStaleSocketIsReplacedAndAPlantedFileRefused() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 91)
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url))
    let path = fixture.catalog.path + ".sock"
    let first = try await startRunner(fixture, server)
    first.signal(SIGKILL)
    _ = await first.wait()
    #expect(socketInfo(path) != nil, "a killed owner leaves its socket")
    #expect(throws: (any Error).self) { try UnixSocketClient(path: path) }
    // Nobody answers there: the subcommands work on the catalog itself.
    #expect(try await fixture.run("ls").status == 0)

    let second = try await startRunner(fixture, server)
    let client = try UnixSocketClient(path: path)
    #expect(
      try client.exchange(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion"}"#).contains("\"result\""))
    second.signal(SIGTERM)
    #expect(await second.wait().status == 130)

    // A file at the socket's name is not haul's: run refuses to start, and leaves it.
    try Data("mine".utf8).write(to: URL(fileURLWithPath: path))
    let refused = try await fixture.run("run")
    #expect(refused.status == 3, "\(refused)")
    #expect(
      refused.stderr.contains("the control socket's name \(path) is taken by a regular file"), "\(refused)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("mine".utf8))
    #expect(try await fixture.list().first?["state"] == "queued", "nothing ran")
  }

  @Test func subcommandsActThroughTheOwner() async throws {
    let server = try TestServer()
    let slow = ServedFile.serve(2, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 92)
    let fast = ServedFile.serve(1, size: 200_000, on: server, seed: 93, prefix: "fast")
    let fixture = try CatalogFixture()
    // Two slow downloads (one connection each, 150 s at their rate): while one is paused, the
    // other keeps the runner running.
    let ids = try await fixture.add(["-d", "out", "-x", "1"] + slow.map(\.url))
    let (first, second) = (ids[0], ids[1])
    let runner = try await startRunner(fixture, server)

    // add: queued in the running process, which runs it at once (credentials stay in its memory).
    let added = try await fixture.run("add", ["-d", "out", "-H", "Authorization: Bearer t0ken", fast[0].url])
    #expect(added.status == 0, "\(added)")
    #expect(!added.stderr.contains("will wait, paused"), "\(added)")
    let fastID = try #require(added.stdout.split(separator: "\n").first.map(String.init))
    try await CatalogFixture.waitUntil("the added download completes in the runner") {
      try await fixture.download(fastID)?["state"] == "complete"
    }
    #expect(fixture.contents("out/fast0.bin") == fast[0].body)
    #expect(
      try await fixture.download(fastID)?["needs_credentials"].map { ["false", "0"].contains($0) } == true)

    // pause and resume, by prefix, take effect in the runner.
    let paused = try await fixture.run("pause", [String(first.prefix(6))])
    #expect(paused.status == 0 && paused.stderr.contains("paused \(first)"), "\(paused)")
    #expect(try await fixture.download(first)?["state"] == "paused")
    let resumed = try await fixture.run("resume", [first])
    #expect(resumed.status == 0, "\(resumed)")
    #expect(["queued", "active"].contains(try await fixture.download(first)?["state"] ?? ""))

    // A refusal comes back as the runner's error, with its exit status: a state conflict, 1.
    let finished = try await fixture.run("pause", [fastID])
    #expect(finished.status == 1 && finished.stderr.contains("haul: "), "\(finished)")
    #expect(finished.stderr.contains("is complete") && !finished.stderr.contains("--help"), "\(finished)")

    // rm --delete-files, then pause --all.
    try await CatalogFixture.waitUntil("the second download has a partial file") {
      fixture.directory.exists("out/f1.bin.part")
    }
    let removed = try await fixture.run("rm", ["--delete-files", second])
    #expect(removed.status == 0, "\(removed)")
    #expect(try await fixture.download(second).map { $0["state"] == "removed" } ?? true)
    #expect(!fixture.directory.exists("out/f1.bin.part"), "its partial file is deleted")
    #expect(try await fixture.run("pause", ["--all"]).status == 0)
    #expect(try await fixture.download(first)?["state"] == "paused")

    // Nothing is left to run: the runner ends by itself, and the paused download stays paused.
    let outcome = await runner.wait()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(try await fixture.download(first)?["state"] == "paused")
  }

  /// The methods `haul ui` uses when attached: every download with its live numbers, the
  /// limits read and changed, cancel; a refusal is a result, as for the others.
  @Test func theAttachedViewsMethodsAnswerOnTheSocket() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 89)
    let fixture = try CatalogFixture()
    let id = try #require(try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url)).first)
    let runner = try await startRunner(fixture, server)
    let client = try UnixSocketClient(path: fixture.catalog.path + ".sock")
    func ok(_ line: String) throws -> Any? {
      let answer = try #require(try client.call(line) as? [String: Any])
      let result = try #require(answer["result"] as? [String: Any], "\(answer)")
      return result["ok"] ?? result["failure"].map { ["failure": $0] }
    }

    var row: [String: Any] = [:]
    var statistics: [String: Any] = [:]
    try await CatalogFixture.waitUntil("the snapshot shows it receiving") {
      let snapshot = try #require(
        try ok(#"{"jsonrpc":"2.0","id":1,"method":"haul.snapshot"}"#) as? [String: Any])
      row = (snapshot["downloads"] as? [[String: Any]])?.first ?? [:]
      statistics = snapshot["statistics"] as? [String: Any] ?? [:]
      return (row["bytesPerSecond"] as? Double ?? 0) > 0
    }
    #expect(row["id"] as? String == id)
    #expect(row["state"] as? String == "active")
    #expect(row["url"] as? String == files[0].url)
    #expect(row["totalBytes"] as? Int == files[0].body.count)
    #expect((row["file"] as? String)?.hasSuffix("/out/f0.bin") == true, "\(row)")
    #expect(statistics["active"] as? Int == 1 && statistics["maxConcurrent"] as? Int == 4, "\(statistics)")

    let read = try #require(
      try ok(#"{"jsonrpc":"2.0","id":2,"method":"haul.limits","params":[{}]}"#) as? [String: Any])
    #expect(read["maxConcurrent"] as? Int == 4, "\(read)")
    let changed = try #require(
      try ok(
        #"{"jsonrpc":"2.0","id":3,"method":"haul.limits","params":[{"maxConcurrent":2,"overallRateLimit":1000000}]}"#
      )
        as? [String: Any])
    #expect(
      changed["maxConcurrent"] as? Int == 2 && changed["overallRateLimit"] as? Int == 1_000_000, "\(changed)")
    let refused = try #require(
      try ok(#"{"jsonrpc":"2.0","id":4,"method":"haul.limits","params":[{"maxConcurrent":0}]}"#)
        as? [String: Any])
    let failure = try #require(refused["failure"] as? [String: Any], "\(refused)")
    #expect((failure["message"] as? String)?.contains("at least one download") == true, "\(failure)")

    // haul.rateLimit: one download's own limit, as it runs (the snapshot shows it), and lifted.
    func ownLimit() throws -> Any? {
      let snapshot = try #require(
        try ok(#"{"jsonrpc":"2.0","id":6,"method":"haul.snapshot"}"#) as? [String: Any])
      return (snapshot["downloads"] as? [[String: Any]])?.first?["rateLimit"]
    }
    #expect(try ownLimit() is NSNull)
    _ = try ok(#"{"jsonrpc":"2.0","id":7,"method":"haul.rateLimit","params":["\#(id)",50000]}"#)
    #expect(try ownLimit() as? Int == 50_000)
    #expect(try await fixture.download(id)?["state"] == "active", "no restart through the queue")
    let notRate = try #require(
      try ok(#"{"jsonrpc":"2.0","id":8,"method":"haul.rateLimit","params":["\#(id)",0]}"#) as? [String: Any])
    #expect(notRate["failure"] != nil, "\(notRate)")
    #expect(try ownLimit() as? Int == 50_000, "a refused limit changes nothing")
    _ = try ok(#"{"jsonrpc":"2.0","id":9,"method":"haul.rateLimit","params":["\#(id)",null]}"#)
    #expect(try ownLimit() is NSNull)

    // haul.cancel: the download is removed (listed until forgotten); nothing is left to run.
    _ = try ok(#"{"jsonrpc":"2.0","id":5,"method":"haul.cancel","params":[["\#(id)"]]}"#)
    #expect(try await fixture.download(id)?["state"] == "removed")
    let outcome = await runner.wait()
    #expect(outcome.status == 0, "\(outcome)")
  }

  @Test func aPlantedLinkAtTheSocketsNameIsRefused() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 100_000, on: server, seed: 94)
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url))
    let path = fixture.catalog.path + ".sock"
    let target = fixture.directory.file("elsewhere").path
    #expect(symlink(target, path) == 0)
    let refused = try await fixture.run("run")
    #expect(refused.status == 3, "\(refused)")
    #expect(refused.stderr.contains("is taken by a symbolic link"), "\(refused)")
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink(path, &buffer, buffer.count - 1)
    #expect(length > 0 && String(cString: Array(buffer[..<length]) + [0]) == target, "the link is left")
    #expect(!FileManager.default.fileExists(atPath: target), "nothing is made through it")
    #expect(try await fixture.list().first?["state"] == "queued", "nothing ran")
    // The other subcommands do not follow it either: they work on the catalog itself.
    #expect(try await fixture.run("pause", ["--all"]).status == 0)
  }
}
