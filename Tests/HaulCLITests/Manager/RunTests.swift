import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul run` through the real binary: it owns the catalog and runs its downloads; a kill -9
/// loses no download and little progress; paused downloads stay paused across runs.
@Suite("haul run")
struct RunTests {
  @Test func killedDuringSeveralDownloadsThenListedOfflineAndFinishedByteExact() async throws {
    let server = try TestServer()
    // At 120 kB/s each, and silent after every 1 MB until haul's 30 s stall timeout, 4 MB take about
    // two minutes: time enough to see them run even when the test process is starved by the tests
    // around it (in a full ASan run the listing below first showed all three after about 40 s).
    let files = ServedFile.serve(
      3, size: 4_000_000, on: server, bytesPerSecond: 120_000, stallAfter: 1_000_000, seed: 40)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url))
    let runner = try fixture.start("run", ["-j", "3", "--json"])
    // `haul ls` while run owns the catalog: it shows the bytes the runner records.
    try await CatalogFixture.waitUntil("every download has bytes") {
      let listed = try await fixture.list()
      return listed.count == 3
        && listed.allSatisfy { $0["state"] == "active" && (Int64($0["bytes"] ?? "") ?? 0) > 60_000 }
    }
    runner.signal(SIGKILL)
    let killed = await runner.wait()
    #expect(killed.signaled && killed.status == SIGKILL, "\(killed)")

    // Offline: the listing needs no network (the server sees nothing) and shows what is on disk.
    server.clearRequests()
    let listed = try await fixture.list()
    #expect(server.requests.isEmpty)
    #expect(listed.map { $0["id"] } == ids)
    for (download, file) in zip(listed, files) {
      #expect(download["state"] == "queued", "an interrupted download is queued again: \(download)")
      let bytes = try #require(Int64(download["bytes"] ?? ""))
      #expect(bytes > 0 && bytes < Int64(file.body.count), "\(download)")
      #expect(download["total"] == String(file.body.count))
      let sidecar = try #require(try Sidecar.read(fixture.directory.file("out/\(file.name).haul").path))
      #expect(sidecar.claimedBytes == bytes, "ls shows what the state file holds")
    }
    #expect(!files.contains { fixture.directory.exists("out/" + $0.name) }, "nothing unfinished has its name")

    // Run again at full speed: every file ends byte-exact, resumed from what was held.
    for file in files {
      server.updateFaults("/" + file.name) {
        $0.bytesPerSecond = nil
        $0.stallAfterBytes = nil
      }
    }
    let sentBefore = files.map { server.bodyBytesSent(for: "/" + $0.name) }
    let finished = try await fixture.run("run", ["--json"])
    #expect(finished.status == 0, "\(finished)")
    for (file, before) in zip(files, sentBefore) {
      expectBytes(fixture.contents("out/" + file.name), equal: file.body, file.name)
      #expect(server.bodyBytesSent(for: "/" + file.name) - before < file.body.count, "\(file.name) resumed")
    }
    let resumed = finished.events.filter { $0["event"] == "started" }
    #expect(
      resumed.count == 3 && resumed.allSatisfy { (Int64($0["resumed_from"] ?? "") ?? 0) > 0 }, "\(resumed)")
    #expect(Set(resumed.compactMap { $0["id"] }) == Set(ids))
    #expect(try await fixture.list().allSatisfy { $0["state"] == "complete" })
  }

  @Test func aPausedDownloadStaysPausedAcrossRuns() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(2, size: 200_000, on: server, seed: 60)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out"] + files.map(\.url))
    #expect(try await fixture.run("pause", [ids[1]]).status == 0)
    let first = try await fixture.run("run")
    #expect(first.status == 0, "\(first)")
    #expect(first.stderr.contains("✓ saved out/\(files[0].name)"), "\(first)")
    #expect(first.stderr.contains("haul: 1 download: 1 done"), "\(first)")
    expectBytes(fixture.contents("out/" + files[0].name), equal: files[0].body)
    #expect(!fixture.directory.exists("out/" + files[1].name))
    #expect(server.requests(for: "/" + files[1].name).isEmpty)

    let second = try await fixture.run("run")
    #expect(second.status == 0, "\(second)")
    #expect(second.stderr.contains("nothing to run"), "\(second)")
    #expect(second.stderr.split(separator: "\n").count == 1, "said once, without a count: \(second)")
    #expect(server.requests(for: "/" + files[1].name).isEmpty, "still paused")
    #expect(try await fixture.download(ids[1])?["state"] == "paused")

    #expect(try await fixture.run("resume", [ids[1]]).status == 0)
    let third = try await fixture.run("run")
    #expect(third.status == 0, "\(third)")
    expectBytes(fixture.contents("out/" + files[1].name), equal: files[1].body)
  }

  @Test func resumeAllQueuesAFailedDownloadAgain() async throws {
    let server = try TestServer()
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", server.url("/later.bin")])
    #expect(try await fixture.run("run").status == 8)
    #expect(try await fixture.download(ids[0])?["state"] == "failed")
    let resumed = try await fixture.run("resume", ["--all"])
    #expect(resumed.status == 0 && resumed.stderr.contains("resumed every download"), "\(resumed)")
    #expect(try await fixture.download(ids[0])?["state"] == "queued")
    let body = TestResource.random(size: 10_000, seed: 85)
    server.setResource("/later.bin", TestResource(body: body))
    let again = try await fixture.run("run")
    #expect(again.status == 0, "\(again)")
    expectBytes(fixture.contents("out/later.bin"), equal: body)
  }

  /// A download whose state refuses the change is no usage error (2): pause and resume of a
  /// complete one exit 1 and say why, without pointing at --help; an unknown id stays 2.
  @Test func aStateConflictExitsOneAndAnUnknownIdTwo() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 10_000, on: server, seed: 88)
    let fixture = try CatalogFixture()
    let id = try #require(try await fixture.add(["-d", "out", files[0].url]).first)
    #expect(try await fixture.run("run").status == 0)
    for verb in ["pause", "resume"] {
      let refused = try await fixture.run(verb, [id])
      #expect(refused.status == 1, "\(verb): \(refused)")
      #expect(refused.stderr.contains("download \(id) is complete"), "\(verb): \(refused)")
      #expect(!refused.stderr.contains("--help"), "\(verb): \(refused)")
    }
    for verb in ["pause", "resume", "rm"] {
      let unknown = try await fixture.run(verb, ["0000000000000000"])
      #expect(unknown.status == 2, "\(verb): \(unknown)")
    }
    #expect(try await fixture.download(id)?["state"] == "complete")
  }

  /// Under -q, as with `haul URL… -q` (curl's -sS): nothing when everything went well; when
  /// something failed, its line and the closing count.
  @Test func quietShowsTheClosingCountOnlyWhenSomethingFailed() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 10_000, on: server, seed: 87)
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["-d", "out", files[0].url])
    let clean = try await fixture.run("run", ["-q"])
    #expect(clean.status == 0 && clean.stderr.isEmpty, "\(clean)")
    _ = try await fixture.add(["-d", "out", server.url("/missing.bin")])
    let quiet = try await fixture.run("run", ["-q"])
    #expect(quiet.status == 8, "\(quiet)")
    #expect(quiet.stderr.contains("missing.bin"), "the failure is shown: \(quiet)")
    #expect(quiet.stderr.contains("haul: 1 download: 0 done, 1 failed\n"), "the closing count: \(quiet)")
  }

  /// A finished file deleted behind the manager's back is listed as failed: --all fetches it
  /// again, as resume of its id does.
  @Test func resumeAllFetchesAFinishedFileThatWasDeleted() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 10_000, on: server, seed: 86)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", files[0].url])
    #expect(try await fixture.run("run").status == 0)
    try FileManager.default.removeItem(at: fixture.directory.file("out/" + files[0].name))
    #expect(try await fixture.download(ids[0])?["state"] == "failed")
    let resumed = try await fixture.run("resume", ["--all"])
    #expect(resumed.status == 0 && resumed.stderr.contains("resumed every download"), "\(resumed)")
    #expect(try await fixture.download(ids[0])?["state"] == "queued")
    let again = try await fixture.run("run")
    #expect(again.status == 0, "\(again)")
    expectBytes(fixture.contents("out/" + files[0].name), equal: files[0].body)
  }

  /// A finished file changed since: run leaves it alone and says how to replace it with the
  /// manager's commands (not the library's DownloadOptions, not haul URL's same command).
  @Test func aChangedFinishedFileIsLeftWithTheManagersRemedy() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 10_000, on: server, seed: 87)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", files[0].url])
    #expect(try await fixture.run("run").status == 0)
    try Data("changed by hand\n".utf8).write(to: fixture.directory.file("out/" + files[0].name))
    #expect(try await fixture.run("resume", [ids[0]]).status == 0)
    let again = try await fixture.run("run")
    #expect(again.status == 9, "\(again)")
    #expect(again.stderr.contains("haul rm \(ids[0])") && again.stderr.contains("--overwrite"), "\(again)")
    #expect(!again.stderr.contains("DownloadOptions"), "\(again)")
    let hint = try await fixture.download(ids[0])?["hint"] ?? ""
    #expect(hint.contains("haul rm \(ids[0])") && !hint.contains("DownloadOptions"), "\(hint)")
    // The remedy works.
    #expect(try await fixture.run("rm", [ids[0]]).status == 0)
    _ = try await fixture.add(["-d", "out", "--overwrite", files[0].url])
    let replaced = try await fixture.run("run")
    #expect(replaced.status == 0, "\(replaced)")
    expectBytes(fixture.contents("out/" + files[0].name), equal: files[0].body)
  }

  /// What `haul ls` says to do about a changed finished file works: resume alone would meet the
  /// file again and refuse it.
  @Test func theListedRemedyForAChangedFinishedFileWorks() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 10_000, on: server, seed: 88)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", files[0].url])
    #expect(try await fixture.run("run").status == 0)
    let changed = Data("changed by hand\n".utf8)
    try changed.write(to: fixture.directory.file("out/" + files[0].name))
    let hint = try await fixture.download(ids[0])?["hint"] ?? ""
    #expect(hint == "it was left as it is; move or delete it, then resume the download to fetch it again")
    try FileManager.default.moveItem(
      at: fixture.directory.file("out/" + files[0].name), to: fixture.directory.file("kept.bin"))
    #expect(try await fixture.run("resume", [ids[0]]).status == 0)
    let again = try await fixture.run("run")
    #expect(again.status == 0, "\(again)")
    expectBytes(fixture.contents("out/" + files[0].name), equal: files[0].body)
    #expect(fixture.contents("kept.bin") == Array(changed))
  }

  /// `rm --delete-files` deletes a finished file haul made, and says why it keeps one changed since.
  @Test func removingWithItsFilesSaysWhyAChangedFinishedFileIsKept() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(2, size: 10_000, on: server, seed: 89)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out"] + files.map(\.url))
    #expect(try await fixture.run("run").status == 0)
    let changed = Data("changed by hand\n".utf8)
    try changed.write(to: fixture.directory.file("out/" + files[1].name))
    let removed = try await fixture.run("rm", ["--delete-files"] + ids)
    #expect(removed.status == 0, "\(removed)")
    #expect(removed.stderr.contains("haul: removed \(ids[0]) (\(files[0].name))\n"), "\(removed)")
    let path = fixture.directory.file("out/" + files[1].name).path
    #expect(
      removed.stderr.contains(
        "haul: removed \(ids[1]) (\(files[1].name)); kept \(path): it changed after haul finished it (16 bytes, "
          + "finished with \(files[1].body.count)), and --delete-files deletes only what haul made"),
      "\(removed)")
    #expect(!fixture.directory.exists("out/" + files[0].name))
    #expect(fixture.contents("out/" + files[1].name) == Array(changed))
  }

  /// pause and resume change all the ids given or none: with a complete one among them, the
  /// others stay as they were, and the message says so.
  @Test func aCompleteDownloadAmongTheIdsChangesNoneAndSaysSo() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(1, size: 10_000, on: server, seed: 90)
    let fixture = try CatalogFixture()
    let done = try await fixture.add(["-d", "out", files[0].url])[0]
    #expect(try await fixture.run("run").status == 0)
    let queued = try await fixture.add(["http://127.0.0.1:9/q.bin"])[0]
    let paused = try await fixture.add(["--paused", "http://127.0.0.1:9/p.bin"])[0]
    let pause = try await fixture.run("pause", [queued, done])
    #expect(pause.status == 1, "\(pause)")
    #expect(
      pause.stderr
        == "haul: download \(done) is complete: there is nothing to pause\nhaul: nothing was paused: haul pause "
        + "changes all the downloads given or none; give the others without it\n", "\(pause)")
    let resume = try await fixture.run("resume", [paused, done])
    #expect(resume.status == 1, "\(resume)")
    #expect(
      resume.stderr.hasSuffix(
        "haul: nothing was resumed: haul resume changes all the downloads given or none; give the others without it\n"
      ), "\(resume)")
    #expect(try await fixture.download(queued)?["state"] == "queued")
    #expect(try await fixture.download(paused)?["state"] == "paused")
    // One id alone: the refusal as it was.
    let alone = try await fixture.run("pause", [done])
    #expect(alone.stderr == "haul: download \(done) is complete: there is nothing to pause\n", "\(alone)")
  }

  /// Interrupted with downloads still queued, the closing count includes them as not started:
  /// it counts what the run had to do, not only what it began.
  @Test func anInterruptedRunCountsWhatItLeftQueued() async throws {
    let server = try TestServer()
    let files = ServedFile.serve(3, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 91)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url))
    let runner = try fixture.start("run", ["-j", "1"])
    try await CatalogFixture.waitUntil("the first download has bytes") {
      (Int64(try await fixture.download(ids[0])?["bytes"] ?? "") ?? 0) > 0
    }
    runner.signal(SIGINT)
    let stopped = await runner.wait()
    #expect(stopped.status == 130, "\(stopped)")
    #expect(
      stopped.stderr.contains(": 0 done, 1 stopped, 2 not started; run the same command again to resume"),
      "\(stopped)")
  }

  @Test func aFailedDownloadGivesTheBatchStatusAndSIGTERMStopsWithEverythingKept() async throws {
    let server = try TestServer()
    // One connection at its rate: 40 s, so SIGTERM lands mid-download on a loaded machine.
    let files = ServedFile.serve(1, size: 4_000_000, on: server, bytesPerSecond: 100_000, seed: 80)
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["-d", "out", server.url("/missing.bin")])
    let failed = try await fixture.run("run")
    #expect(failed.status == 8, "a 404 is the batch's status: \(failed)")
    #expect(try await fixture.list().first?["state"] == "failed")

    let ids = try await fixture.add(["-d", "out", "-x", "1"] + files.map(\.url))
    let runner = try fixture.start("run", ["--json"])
    try await CatalogFixture.waitUntil("bytes arrive") {
      (Int64(try await fixture.download(ids[0])?["bytes"] ?? "") ?? 0) > 200_000
    }
    runner.signal(SIGTERM)
    let stopped = await runner.wait()
    #expect(!stopped.signaled && stopped.status == 130, "\(stopped)")
    let download = try #require(try await fixture.download(ids[0]))
    #expect(download["state"] == "queued", "stopped, not paused: the next run continues it (\(download))")
    let held = try #require(Int64(download["bytes"] ?? ""))
    #expect(held > 200_000)
    server.updateFaults("/" + files[0].name) { $0.bytesPerSecond = nil }
    let again = try await fixture.run("run", ["--json"])
    #expect(again.status == 0, "\(again)")
    #expect(again.event("started")?["resumed_from"] == String(held), "\(again)")
    expectBytes(fixture.contents("out/" + files[0].name), equal: files[0].body)
  }

  /// `haul add --auto-rename` says which URL gets a number, as `haul URL…` does, and the catalog
  /// keeps it: `haul run` saves the later URL's file under the number where its server names
  /// none, and under the server's name where it gives one.
  @Test func addWithAutoRenameSaysSoAndTheRunnerKeepsIt() async throws {
    let server = try TestServer()
    let bodies = (0..<3).map { TestResource.random(size: 20_000 + $0, seed: 60 + UInt64($0)) }
    server.setResource("/a/x.bin", TestResource(body: bodies[0], etag: "\"a\""))
    server.setResource("/b/x.bin", TestResource(body: bodies[1], etag: "\"b\""))
    server.setResource(
      "/c/x.bin",
      TestResource(body: bodies[2], etag: "\"c\"", contentDisposition: "attachment; filename=\"c.bin\""))
    let fixture = try CatalogFixture()
    let urls = ["a", "b", "c"].map { server.url("/\($0)/x.bin") }
    let added = try await fixture.run("add", ["--auto-rename", "-d", "dl"] + urls)
    #expect(added.status == 0, "\(added)")
    #expect(
      added.stderr.contains(
        "haul: saving \(urls[1]) as dl/x.1.bin unless its server names the file (--auto-rename: \(urls[0]) has the name)"
      ), "\(added)")
    #expect(added.stderr.contains("saving \(urls[2]) as dl/x.2.bin unless"), "\(added)")
    // Listed by the names they will take, unless their servers name them.
    let listed = try await fixture.run("ls")
    for name in ["x.bin", "x.1.bin", "x.2.bin"] {
      #expect(listed.stdout.contains(" \(name)"), "\(listed)")
    }
    let finished = try await fixture.run("run")
    #expect(finished.status == 0, "\(finished)")
    #expect(try await fixture.run("ls").stdout.contains(" c.bin"))
    for (name, body) in zip(["x.bin", "x.1.bin", "c.bin"], bodies) {
      #expect(fixture.contents("dl/" + name) == body, "\(name)")
    }
    #expect(!fixture.directory.exists("dl/x.2.bin"))
  }
}
