import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

/// kill -9 of the daemon in the middle of eight downloads, then a new daemon on the same catalog.
@Suite("haul daemon crash", .serialized)
struct DaemonCrashTests {
  @Test func killedDuringEightDownloadsEveryOneContinuesExactly() async throws {
    let directory = try TemporaryDirectory()
    let server = try TestServer()
    defer { server.stop() }
    var bodies: [String: [UInt8]] = [:]
    for index in 0..<8 {
      let body = TestResource.random(size: 3 << 20, seed: UInt64(100 + index))
      bodies["f\(index).bin"] = body
      // The first response of each goes silent after 1 MiB: none can finish before the kill,
      // however slow the machine (the stall timeout of 600 s does not end it first).
      server.setResource(
        "/f\(index).bin",
        TestResource(
          body: body, etag: "\"\(index)\"", faults: TestFaults(stallAfterBytes: 1 << 20, stallTimes: 1)))
    }
    let first = try await DaemonProcess.start(in: directory, arguments: ["-j", "8"])
    var gids: [String: JSONValue] = [:]
    for name in bodies.keys.sorted() {
      gids[name] = try await first.call(
        "aria2.addUri", [[.string(server.url("/" + name))], ["split": "1", "timeout": "600"]])
    }
    // Every one is running and has checkpointed bytes: its state file exists (before the first
    // checkpoint a kill makes the download start over, by design).
    let deadline = ContinuousClock.now + .seconds(120)
    while true {
      let active = try await first.call("aria2.tellActive", [["gid", "completedLength"]]).array ?? []
      let holding = active.filter { ($0["completedLength"]?.string).flatMap { Int64($0) } ?? 0 > 0 }
      let checkpointed = bodies.keys.filter {
        FileManager.default.fileExists(atPath: directory.file("downloads/\($0).haul").path)
      }
      if holding.count == 8, checkpointed.count == 8 { break }
      try #require(
        ContinuousClock.now < deadline,
        "only \(holding.count) of 8 downloads got going, \(checkpointed.count) checkpointed")
      try await Task.sleep(for: .milliseconds(50))
    }
    let killed = await first.kill()
    #expect(killed.signaled)
    let requestsBefore = server.requests.count

    let second = try await DaemonProcess.start(in: directory, arguments: ["-j", "8"])
    // Every one listed with its id, none more. The three lists are read one after the other
    // while downloads move between them (one that starts in between is in neither), so the
    // reading is repeated until their union is complete (bounded); no list holds an id twice.
    let expected = Set(gids.values.compactMap(\.string))
    var listed: Set<String> = []
    let listing = ContinuousClock.now + .seconds(30)
    repeat {
      listed = []
      for method in ["aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped"] {
        let params: [JSONValue] = method == "aria2.tellActive" ? [["gid"]] : [0, 100, ["gid"]]
        let ids = (try await second.call(method, params).array ?? []).compactMap { $0["gid"]?.string }
        #expect(Set(ids).count == ids.count, "\(method) lists an id twice: \(ids)")
        listed.formUnion(ids)
      }
    } while listed != expected && ContinuousClock.now < listing
    #expect(listed == expected, "the same ids after the restart")
    try await second.waitFor(Array(gids.values), status: "complete", seconds: 180)
    let statuses = try await second.call(
      "aria2.tellStopped", [0, 100, ["gid", "totalLength", "completedLength"]])
    let outcome = await second.stop()
    #expect(outcome.status == 0, "\(outcome)")
    for entry in statuses.array ?? [] {
      #expect(entry["completedLength"] == entry["totalLength"])
    }
    for (name, body) in bodies {
      let file = directory.file("downloads/" + name)
      let bytes = FileManager.default.contents(atPath: file.path).map(Array.init)
      #expect(bytes == body, "\(name) is not byte-exact")
    }
    // No download was fetched twice under another name, none left leftovers.
    let files = try FileManager.default.contentsOfDirectory(atPath: directory.file("downloads").path).sorted()
    #expect(files == bodies.keys.sorted())
    // Each continued from what it held: a range request after the restart.
    let after = server.requests.dropFirst(requestsBefore)
    for name in bodies.keys {
      let ranges = after.filter { $0.path == "/" + name }.compactMap { $0.headers["Range"] }
      #expect(!ranges.isEmpty, "\(name) was fetched again from byte 0")
    }
  }

  @Test func sigtermStopsWithTheBytesKeptAndTheNextStartContinues() async throws {
    let directory = try TemporaryDirectory()
    let server = try TestServer()
    defer { server.stop() }
    let body = TestResource.random(size: 2 << 20, seed: 120)
    // The first response goes silent after 512 KiB: the download is running when SIGTERM comes.
    server.setResource(
      "/t.bin",
      TestResource(body: body, etag: "\"120\"", faults: TestFaults(stallAfterBytes: 512 << 10, stallTimes: 1))
    )
    let first = try await DaemonProcess.start(in: directory)
    let gid = try await first.call(
      "aria2.addUri", [[.string(server.url("/t.bin"))], ["split": "1", "timeout": "600"]])
    let deadline = ContinuousClock.now + .seconds(60)
    while Int(
      try await first.call("aria2.tellStatus", [gid, ["completedLength"]])["completedLength"]?.string ?? "")
      ?? 0
      < 512 << 10
    {
      try #require(ContinuousClock.now < deadline, "the first 512 KiB did not arrive")
      try await Task.sleep(for: .milliseconds(20))
    }
    let stopped = await first.stop()
    #expect(stopped.status == 0, "\(stopped)")
    #expect(!stopped.signaled)
    #expect(stopped.stderr.contains("stopping"))
    #expect(!FileManager.default.fileExists(atPath: directory.file("catalog.sqlite.sock").path))

    let second = try await DaemonProcess.start(in: directory)
    try await second.waitFor([gid], status: "complete", seconds: 120)
    let outcome = await second.stop()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      FileManager.default.contents(atPath: directory.file("downloads/t.bin").path).map(Array.init) == body)
    // The second run asked for what the first did not have: from 512 KiB on.
    let ranges = server.requests(for: "/t.bin").compactMap { $0.headers["Range"] }
    #expect(ranges.contains("bytes=\(512 << 10)-"), "\(ranges)")
  }
}
