import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

// The state file, the disk and finished files.
extension DownloadTests {
  // MARK: - The state file and the disk

  @Test func corruptStateStartsOverSafely() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 22)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Self.makePartial(server: server, path: "/f", file: file, bytes: 30_000)
    var text = try Data(contentsOf: URL(fileURLWithPath: file.path + ".haul"))
    text[text.count / 2] ^= 0x20
    try text.write(to: URL(fileURLWithPath: file.path + ".haul"))
    server.clearRequests()
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests.first?.header("Range") == nil)
    // One plain sentence, once (the command adds "; starting over").
    #expect(outcome.restarts == ["the saved state was unreadable"])
  }

  @Test func dataLostAfterTheLastSyncIsRefetched() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 23)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Self.makePartial(server: server, path: "/f", file: file, bytes: 120_000)
    // Power-loss model: the data file lost its tail although the state claims it.
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file.path + ".part"))
    try handle.truncate(atOffset: 70_000)
    try handle.close()
    server.clearRequests()
    _ = try await Self.run(server.url("/f"), to: .file(file))
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests.first?.header("Range") == "bytes=70000-")
  }

  /// A download records a new version on its `.part` file and writes the state file with its
  /// first checkpoint; killed before that, the `.part` still says whose it is: the next run
  /// starts over without asking, and another URL's download leaves it alone.
  /// A kill -9 mid-commit leaves a temporary copy of the state beside it: the run that resumes
  /// and finishes that download removes it (and nothing of another download's).
  @Test func theRunThatFinishesAResumedDownloadRemovesLeftoverStateCopies() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 61)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Self.makePartial(server: server, path: "/f", file: file, bytes: 100_000)
    let leftover = directory.file("f.haul.tmp-AAAAAAAAAAAA")
    let other = directory.file("g.haul.tmp-AAAAAAAAAAAA")
    for path in [leftover, other] { try Data("old".utf8).write(to: path) }
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    #expect(outcome.value?.resumedFrom == 100_000)
    #expect(Self.holds(file, body))
    #expect(!Self.exists(leftover.path))
    #expect(Self.exists(other.path))
  }

  @Test func aMarkedPartWithoutAStateFileStartsOver() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 50_000, seed: 23)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    server.setResource("/g", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try Data(repeating: 7, count: 20_000).write(to: URL(fileURLWithPath: file.path + ".part"))
    let marked = try PartFile(path: file.path + ".part").setAttribute(
      FinishedFileRecord.attribute, StateJournal.encode(ResumeState(url: server.url("/f"))))
    guard marked else { return }  // a file system without extended attributes has state files from the start
    let other = try await Self.run(server.url("/g"), to: .file(file))
    #expect(other.error?.message.contains("belongs to another download") == true)
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    #expect(outcome.error == nil)
    #expect(server.requests(for: "/f").first?.header("Range") == nil)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(!Self.exists(file.path + ".haul"))
  }

  @Test func aPartFileHaulDidNotMakeIsLeftAlone() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: [1, 2, 3]))
    let directory = try TemporaryDirectory()
    let part = URL(fileURLWithPath: directory.file("f").path + ".part")
    try Data("someone else's".utf8).write(to: part)
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    #expect(outcome.error?.category == .fileSystem)
    do {
      let same = Self.holds(part, Array("someone else's".utf8))
      #expect(same, "file bytes differ")
    }
  }

  @Test func twoDownloadsOfOneFileNeverRunAtOnce() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 400_000, seed: 24)
    // The first response goes silent after 200 kB (once) and the stall timeout is long, so the
    // first download is still running however late a busy machine lets this test look (a
    // throttled one could finish, and take its state file away, before the loop saw it).
    let faults = TestFaults(stallAfterBytes: 200_000, stallTimes: 1)
    server.setResource("/f", TestResource(body: body, etag: Self.etag, faults: faults))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var options = Self.fastOptions()
    options.stallTimeout = 60
    let firstDownload = Locked<Download?>(nil)
    let first = Task {
      try await Self.run(server.url("/f"), to: .file(file), options: options) { event, download in
        firstDownload.withLock { $0 = download }
        // Let it finish once the second has been refused: a new request gets the rest.
        if case .paused = event { download.resume() }
      }
    }
    while !Self.exists(file.path + ".haul") || firstDownload.withLock({ $0 }) == nil {
      try await Task.sleep(for: .milliseconds(5))
    }
    // In this process: said so (a manager's or daemon's two downloads of one file).
    let second = try await Self.run(server.url("/f"), to: .file(file))
    #expect(
      second.error?.message == "another download in this process is already writing \(file.path)",
      "\(String(describing: second.error))")
    #expect(second.error?.underlying as? TargetInUse == TargetInUse(here: true))
    try #require(firstDownload.withLock { $0 }).pause()
    #expect(try await first.value.error == nil)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
  }

  /// A `.part` locked by something else than this process's downloads: another haul process.
  @Test func aPartLockedElsewhereIsAnotherProcesss() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 1_000, seed: 26), etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let descriptor = open(file.path + ".part", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    try #require(descriptor >= 0)
    defer { close(descriptor) }
    try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
    let refused = try await Self.run(server.url("/f"), to: .file(file))
    #expect(refused.error?.message == "another haul process is downloading \(file.path)")
    #expect(refused.error?.underlying as? TargetInUse == TargetInUse(here: false))
    #expect(server.requests.isEmpty)
  }

  @Test func missingDirectoryAndDirectoryTargetAreFileErrors() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: [1]))
    let directory = try TemporaryDirectory()
    let missing = try await Self.run(server.url("/f"), to: .directory(directory.file("nope")))
    #expect(missing.error?.category == .fileSystem)
    let intoDirectory = try await Self.run(server.url("/f"), to: .file(directory.url))
    #expect(intoDirectory.error?.category == .fileSystem)
    #expect(server.requests.isEmpty)
  }

  // MARK: - Finished files

  @Test func rerunOfAFinishedDownloadFetchesNothing() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 25)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    _ = try await Self.run(server.url("/f"), to: .directory(directory.url))
    server.clearRequests()
    let again = try await Self.run(server.url("/f"), to: .directory(directory.url))
    let result = try #require(again.value)
    #expect(result.wasAlreadyComplete)
    #expect(!result.remoteChanged)
    #expect(server.requests.count == 1)
    #expect(server.requests.first?.status == 416)
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func rerunNoticesTheServerCopyChangedAndLeavesTheFile() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 26)
    server.setResource("/f", TestResource(body: body, etag: "\"a\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    _ = try await Self.run(server.url("/f"), to: .file(file))
    let newer = TestResource.random(size: 100_000, seed: 27)
    server.setResource("/f", TestResource(body: newer, etag: "\"b\""))
    let again = try await Self.run(server.url("/f"), to: .file(file))
    #expect(again.value?.remoteChanged == true)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    var options = Self.fastOptions()
    options.overwrite = true
    let forced = try await Self.run(server.url("/f"), to: .file(file), options: options)
    #expect(forced.value?.wasAlreadyComplete == false)
    do {
      let same = Self.holds(file, newer)
      #expect(same, "file bytes differ")
    }
  }

  /// A state file left without its `.part` (its data removed, a killed run's) is seen at the
  /// start, so it is still read, and removed at the end though the download never saved one;
  /// into a directory, the state file's URL also names the target.
  @Test(arguments: [false, true])
  func aStateFileLeftWithoutItsPartIsRemovedAtTheEnd(intoDirectory: Bool) async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 50_000, seed: 31)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("kept")
    var state = ResumeState(url: server.url("/f"))
    state.etag = Self.etag
    state.totalBytes = 50_000
    state.setContiguous(20_000)
    try StateJournal.save(state, to: file.path + ".haul")
    let outcome = try await Self.run(
      server.url("/f"), to: intoDirectory ? .directory(directory.url) : .file(file))
    #expect(outcome.error == nil)
    #expect(outcome.value?.file.path == file.path)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(!Self.exists(file.path + ".haul"))
    #expect(!Self.exists(file.path + ".part"))
  }
}
