import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// End-to-end behaviour of `Download` against the in-process test server: every fault the
/// engine must survive, each ending in byte-identical files (or a clear, specific error).
@Suite struct DownloadTests {
  static let etag = "\"v1\""
  static let date = "Sun, 06 Nov 1994 08:49:37 GMT"

  /// Options that keep retries fast in tests.
  static func fastOptions() -> DownloadOptions {
    var options = DownloadOptions()
    options.retryBaseDelay = 0.01
    options.maxRetryDelay = 0.05
    options.stallTimeout = 2
    options.connections = 1
    return options
  }

  struct Outcome {
    var result: Result<DownloadResult, HaulError>
    var events: [DownloadEvent]

    var value: DownloadResult? { try? result.get() }
    var error: HaulError? {
      if case .failure(let error) = result { return error }
      return nil
    }
    var restarts: [String] {
      events.compactMap { if case .restarted(let reason) = $0 { reason } else { nil } }
    }
    var retries: [RetryNotice] {
      events.compactMap { if case .retrying(let notice) = $0 { notice } else { nil } }
    }
    var started: [DownloadStart] {
      events.compactMap { if case .started(let start) = $0 { start } else { nil } }
    }
  }

  /// Runs a download to its end and collects its events.
  static func run(
    _ url: String, to destination: DownloadDestination, options: DownloadOptions = fastOptions(),
    minimumSplit: Int64 = 1 << 20, onEvent: (@Sendable (DownloadEvent, Download) -> Void)? = nil
  ) async throws -> Outcome {
    let download = try Download(
      url: url, to: destination, options: options, transport: try #require(CurlTransport.shared),
      minimumSplit: minimumSplit)
    // The one consumer of the event stream; tests react to events through `onEvent`.
    let collector = Task {
      var events: [DownloadEvent] = []
      for await event in download.events {
        events.append(event)
        onEvent?(event, download)
      }
      return events
    }
    let result: Result<DownloadResult, HaulError>
    do throws(HaulError) {
      result = .success(try await download.run())
    } catch {
      result = .failure(error)
    }
    return Outcome(result: result, events: await collector.value)
  }

  /// True the first time only.
  final class Once: Sendable {
    private let done = Mutex(false)
    func callAsFunction() -> Bool {
      done.withLock { done in
        defer { done = true }; return !done
      }
    }
  }

  /// Whether the file holds exactly these bytes (a Bool, so a failure does not print megabytes).
  static func holds(_ url: URL, _ expected: [UInt8]) -> Bool { bytes(url) == expected }

  static func bytes(_ url: URL) -> [UInt8]? {
    (try? Data(contentsOf: url)).map { Array($0) }
  }

  static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

  /// Leaves an interrupted download of `path` in `file`: the first response drops after `bytes`.
  static func makePartial(
    server: TestServer, path: String, file: URL, bytes: Int
  ) async throws {
    server.updateFaults(path) {
      $0.dropAfterBytes = bytes
      $0.dropTimes = 1
    }
    var options = fastOptions()
    options.maxAttemptsWithoutProgress = 1
    let outcome = try await run(server.url(path), to: .file(file), options: options)
    #expect(outcome.error?.category == .network)
    #expect(SavedProgress.load(for: file)?.bytes == Int64(bytes))
  }

  // MARK: - Straight downloads

  @Test func downloadsWholeFileAndCleansUp() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 1)
    server.setResource("/file.bin", TestResource(body: body, etag: Self.etag, lastModified: Self.date))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/file.bin"), to: .directory(directory.url))
    let result = try #require(outcome.value)
    #expect(result.file.lastPathComponent == "file.bin")
    do {
      let same = Self.holds(result.file, body)
      #expect(same, "file bytes differ")
    }
    #expect(result.totalBytes == 3_000_000)
    #expect(result.bytesReceived == 3_000_000)
    #expect(!Self.exists(result.file.path + ".part"))
    #expect(!Self.exists(result.file.path + ".haul"))
    #expect(outcome.started.first?.totalBytes == 3_000_000)
    guard case .completed? = outcome.events.last else {
      Issue.record("last event is not .completed")
      return
    }
    // Never a HEAD: the GET tells everything.
    #expect(server.requests.allSatisfy { $0.method == "GET" })
    #expect(server.requests.count == 1)
  }

  @Test func worksWhenHEADIsRefused() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 10_000, seed: 2)
    server.setResource("/f", TestResource(body: body, faults: TestFaults(refuseHEAD: true)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("out")))
    do {
      let same = Self.holds(directory.file("out"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.error == nil)
  }

  @Test func emptyFile() async throws {
    let server = try TestServer()
    server.setResource("/empty", TestResource(body: []))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/empty"), to: .file(directory.file("empty")))
    #expect(outcome.value?.totalBytes == 0)
    #expect(Self.bytes(directory.file("empty")) == [])
  }

  @Test func chunkedWithoutContentLength() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 3)
    server.setResource("/c", TestResource(body: body, faults: TestFaults(chunked: true)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/c"), to: .file(directory.file("c")))
    #expect(outcome.started.first?.totalBytes == nil)
    #expect(outcome.value?.totalBytes == 200_000)
    do {
      let same = Self.holds(directory.file("c"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func chunkedBodyThatBreaksIsResumed() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 4)
    server.setResource(
      "/c",
      TestResource(
        body: body, etag: Self.etag, faults: TestFaults(dropAfterBytes: 100_000, dropTimes: 2, chunked: true))
    )
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/c"), to: .file(directory.file("c")))
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(directory.file("c"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/c").dropFirst().allSatisfy { $0.header("Range") != nil })
  }

  @Test func followsRedirectsAndNamesFromFinalURL() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 5000, seed: 5)
    server.setResource("/real/name.tar.gz", TestResource(body: body))
    server.setRedirect("/start", to: "/hop", status: 301)
    server.setRedirect("/hop", to: server.url("/real/name.tar.gz"), status: 307)
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/start"), to: .directory(directory.url))
    let result = try #require(outcome.value)
    #expect(result.file.lastPathComponent == "name.tar.gz")
    #expect(result.finalURL == server.url("/real/name.tar.gz"))
    do {
      let same = Self.holds(result.file, body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func tooManyRedirectsIsAProtocolError() async throws {
    let server = try TestServer()
    for hop in 0..<12 { server.setRedirect("/r\(hop)", to: "/r\(hop + 1)") }
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/r0"), to: .directory(directory.url))
    #expect(outcome.error?.category == .protocol)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  @Test func percentEncodesSpacesAndNonASCII() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 6)
    server.setResource("/dir/a%20file%20%C3%BC.txt", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let url = "http://127.0.0.1:\(server.port)/dir/a file ü.txt"
    let outcome = try await Self.run(url, to: .directory(directory.url))
    let result = try #require(outcome.value)
    #expect(result.file.lastPathComponent == "a file ü.txt")
    do {
      let same = Self.holds(result.file, body)
      #expect(same, "file bytes differ")
    }
  }

  // MARK: - Names

  @Test func namesFromContentDispositionExtendedValue() async throws {
    let server = try TestServer()
    server.setResource(
      "/download?id=7",
      TestResource(
        body: [1, 2, 3],
        contentDisposition:
          "attachment; filename=\"fallback.txt\"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt"))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/download?id=7"), to: .directory(directory.url))
    #expect(outcome.value?.file.lastPathComponent == "naïve résumé.txt")
  }

  @Test func hostileNamesStayInsideTheDirectory() async throws {
    let server = try TestServer()
    server.setResource(
      "/x", TestResource(body: [9, 9], contentDisposition: "attachment; filename=\"../../etc/passwd\""))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/x"), to: .directory(directory.url))
    let result = try #require(outcome.value)
    #expect(
      result.file.deletingLastPathComponent().standardizedFileURL.path
        == directory.url.standardizedFileURL.path)
    #expect(result.file.lastPathComponent == "passwd")
  }

  @Test func neverOverwritesAFileHaulDidNotMake() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 7)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let target = directory.file("f")
    try Data("precious".utf8).write(to: target)
    let refused = try await Self.run(server.url("/f"), to: .file(target))
    #expect(refused.error?.category == .fileSystem)
    #expect(refused.error?.hint?.contains("--overwrite") == true)
    do {
      let same = Self.holds(target, Array("precious".utf8))
      #expect(same, "file bytes differ")
    }
    #expect(!Self.exists(target.path + ".part"))
    // The same through a directory, where the name comes from the response.
    let viaDirectory = try await Self.run(server.url("/f"), to: .directory(directory.url))
    #expect(viaDirectory.error?.category == .fileSystem)
    do {
      let same = Self.holds(target, Array("precious".utf8))
      #expect(same, "file bytes differ")
    }

    var options = Self.fastOptions()
    options.overwrite = true
    let replaced = try await Self.run(server.url("/f"), to: .file(target), options: options)
    #expect(replaced.error == nil)
    do {
      let same = Self.holds(target, body)
      #expect(same, "file bytes differ")
    }
  }

  // MARK: - Resuming

  @Test func resumesAfterDroppedConnectionsWithIfRange() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1_000_000, seed: 8)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Self.etag, lastModified: Self.date,
        faults: TestFaults(dropAfterBytes: 300_000, dropTimes: 3)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let requests = server.requests(for: "/f")
    #expect(requests.count == 4)
    for request in requests.dropFirst() {
      #expect(request.header("Range")?.hasPrefix("bytes=") == true)
      #expect(request.header("If-Range") == Self.etag)
      #expect(request.status == 206)
    }
    #expect(outcome.retries.count == 3)
    #expect(outcome.restarts.isEmpty)
  }

  @Test func ifRangeFallsBackToLastModifiedForWeakETags() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 9)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: "W/\"weak\"", lastModified: Self.date,
        faults: TestFaults(dropAfterBytes: 40_000, dropTimes: 1)))
    let directory = try TemporaryDirectory()
    _ = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/f").last?.header("If-Range") == Self.date)
  }

  @Test func resumesInANewRunFromTheSavedState() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 10)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Self.makePartial(server: server, path: "/f", file: file, bytes: 123_456)
    let progress = try #require(SavedProgress.load(for: file))
    #expect(progress.totalBytes == 500_000)
    #expect(progress.url == server.url("/f"))
    #expect(SavedProgress.all(in: directory.url) == [progress])
    server.clearRequests()
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 123_456)
    #expect(outcome.value?.bytesReceived == Int64(500_000 - 123_456))
    #expect(server.requests.first?.header("Range") == "bytes=123456-")
    #expect(outcome.started.first?.resumedFrom == 123_456)
  }

  @Test func resumeInADirectoryFindsThePartialByURL() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 11)
    server.setResource(
      "/get?id=1",
      TestResource(body: body, etag: Self.etag, contentDisposition: "attachment; filename=report.pdf"))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(
      server: server, path: "/get?id=1", file: directory.file("report.pdf"), bytes: 50_000)
    server.clearRequests()
    let outcome = try await Self.run(server.url("/get?id=1"), to: .directory(directory.url))
    #expect(outcome.value?.file.lastPathComponent == "report.pdf")
    do {
      let same = Self.holds(directory.file("report.pdf"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests.first?.header("Range") == "bytes=50000-")
  }

  @Test func serverIgnoringRangesRestartsFromZeroWithThatResponse() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 400_000, seed: 12)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    server.updateFaults("/f") { $0.ignoreRange = true }
    server.clearRequests()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests.count == 1)  // the 200 itself was used
    #expect(outcome.restarts.count == 1)
  }

  @Test func resourceReplacedOnServerIsNeverSpliced() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 400_000, seed: 13)
    server.setResource("/f", TestResource(body: old, etag: "\"old\""))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 150_000)
    let new = TestResource.random(size: 400_000, seed: 14)
    server.setResource("/f", TestResource(body: new, etag: "\"new\""))
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), new)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.count == 1)
  }

  @Test func brokenIfRangeServerIsCaughtByETag() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 300_000, seed: 15)
    server.setResource("/f", TestResource(body: old, etag: "\"old\""))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    let new = TestResource.random(size: 300_000, seed: 16)
    server.setResource(
      "/f", TestResource(body: new, etag: "\"new\"", faults: TestFaults(ignoreIfRange: true)))
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), new)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.first?.contains("ETag") == true)
  }

  @Test func wrongContentRangeIsNeverWrittenAtTheWrongOffset() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 17)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    server.updateFaults("/f") { $0.contentRangeShift = 1000 }
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.count == 1)
  }

  @Test func changedTotalInContentRangeRestarts() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 18)
    server.setResource("/f", TestResource(body: body))  // no validators: the total is the only guard
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    server.updateFaults("/f") { $0.wrongTotal = 999_999 }
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.first?.contains("size") == true)
  }

  @Test func partialLongerThanRemoteIsDiscarded() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 19)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 250_000)
    let smaller = TestResource.random(size: 100_000, seed: 20)
    server.setResource("/f", TestResource(body: smaller))
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), smaller)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.first?.contains("longer") == true)
  }

  @Test func partialHoldingEverythingCompletesWithoutFetching() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 64_000, seed: 21)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    // As if a run was killed after its last byte but before the rename.
    try Data(body).write(to: URL(fileURLWithPath: file.path + ".part"))
    var state = ResumeState(url: server.url("/f"))
    state.totalBytes = 64_000
    state.etag = Self.etag
    state.setContiguous(64_000)
    try StateJournal.save(state, to: file.path + ".haul")
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    // Every byte was durable and bound to its version: finishing needs no request at all.
    #expect(server.requests.isEmpty)
    #expect(outcome.value?.bytesReceived == 0)
  }

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
    server.setResource("/f", TestResource(body: body, faults: TestFaults(bytesPerSecond: 1_000_000)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let first = Task { try await Self.run(server.url("/f"), to: .file(file)) }
    while !Self.exists(file.path + ".haul") { try await Task.sleep(for: .milliseconds(5)) }
    let second = try await Self.run(server.url("/f"), to: .file(file))
    #expect(second.error?.message.contains("another haul process") == true)
    #expect(try await first.value.error == nil)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
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

  // MARK: - Retries and failures

  @Test func honoursRetryAfterOn503() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 28)
    server.setResource("/f", TestResource(body: body))
    server.enqueue("/f", .status(503, headers: [("Retry-After", "1")]))
    let directory = try TemporaryDirectory()
    let began = Date()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.retries.first?.delay == 1)
    #expect(outcome.retries.first?.reason.category == .server)
    #expect(Date().timeIntervalSince(began) >= 0.95)
  }

  @Test func retries429And5xxThenSucceeds() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 29)
    server.setResource("/f", TestResource(body: body))
    // The drop comes first: on a reused connection libcurl itself retries a request that got no reply.
    server.enqueue("/f", .dropConnection)
    server.enqueue("/f", .status(429, headers: [("Retry-After", "0")]))
    server.enqueue("/f", .status(500))
    server.enqueue("/f", .status(502))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.retries.map(\.attempt) == [1, 2, 3, 4])
  }

  @Test func givesUpAfterTheRetryBudget() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: [1]))
    for _ in 0..<5 { server.enqueue("/f", .status(503)) }
    var options = Self.fastOptions()
    options.maxAttemptsWithoutProgress = 3
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")), options: options)
    #expect(outcome.error?.category == .server)
    #expect(server.requests.count == 3)
    #expect(!Self.exists(directory.file("f").path))
    guard case .failed? = outcome.events.last else {
      Issue.record("last event is not .failed")
      return
    }
  }

  @Test func progressResetsTheRetryBudget() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 600_000, seed: 30)
    server.setResource(
      "/f",
      TestResource(body: body, etag: Self.etag, faults: TestFaults(dropAfterBytes: 100_000, dropTimes: 5)))
    var options = Self.fastOptions()
    options.maxAttemptsWithoutProgress = 2
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")), options: options)
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func permanentFailuresStopAtOnceAndLeaveNothing() async throws {
    let server = try TestServer()
    server.setResource(
      "/secret", TestResource(body: [1], faults: TestFaults(requireAuthorization: "Bearer t")))
    let directory = try TemporaryDirectory()
    let missing = try await Self.run(server.url("/missing"), to: .directory(directory.url))
    #expect(missing.error?.category == .server)
    #expect(missing.error?.message.contains("404") == true)
    let denied = try await Self.run(server.url("/secret"), to: .file(directory.file("secret")))
    #expect(denied.error?.category == .authentication)
    #expect(server.requests.count == 2)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)

    var options = Self.fastOptions()
    options.headers = [("Authorization", "Bearer t")]
    let allowed = try await Self.run(
      server.url("/secret"), to: .file(directory.file("secret")), options: options)
    #expect(allowed.error == nil)
  }

  @Test func stalledTransferTimesOutAndResumes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 31)
    server.setResource(
      "/f",
      TestResource(body: body, etag: Self.etag, faults: TestFaults(stallAfterBytes: 50_000, stallTimes: 1)))
    var options = Self.fastOptions()
    options.stallTimeout = 1
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")), options: options)
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.retries.first?.reason.message.contains("timed out") == true)
    #expect(server.requests(for: "/f").last?.header("Range") == "bytes=50000-")
  }

  @Test func connectionRefusedIsANetworkError() async throws {
    let port: Int
    do {
      let server = try TestServer()
      port = server.port
      server.stop()
    }
    var options = Self.fastOptions()
    options.maxAttemptsWithoutProgress = 2
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      "http://127.0.0.1:\(port)/f", to: .file(directory.file("f")), options: options)
    #expect(outcome.error?.category == .network)
    #expect(outcome.retries.count == 1)
  }

  // MARK: - Pause, resume, cancel

  @Test func pauseAndResume() async throws {
    let server = try TestServer()
    // The server goes silent after 300 kB (once), so the pause lands mid-transfer however late
    // the event consumer runs on a busy machine; the stall timeout is long enough not to interfere.
    let body = TestResource.random(size: 2_000_000, seed: 32)
    server.setResource(
      "/f",
      TestResource(body: body, etag: Self.etag, faults: TestFaults(stallAfterBytes: 300_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var options = Self.fastOptions()
    options.stallTimeout = 60
    let once = Once()
    let outcome = try await Self.run(server.url("/f"), to: .file(file), options: options) { event, download in
      guard case .progress(let progress) = event, progress.bytes > 100_000, once() else { return }
      download.pause()
      Task {
        try? await Task.sleep(for: .milliseconds(300))
        download.resume()
      }
    }
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    let paused = outcome.events.compactMap { if case .paused(let p) = $0 { p } else { nil } }
    #expect(paused.count == 1)
    #expect(outcome.events.contains { if case .resumed = $0 { true } else { false } })
    #expect(server.requests(for: "/f").count == 2)
    #expect(server.requests(for: "/f").last?.header("Range") == "bytes=\(paused.first?.bytes ?? -1)-")
    // The second start says where it resumed from: the bytes held at the pause.
    #expect(outcome.started.map(\.resumedFrom) == [0, paused.first?.bytes ?? -1])
  }

  @Test func cancelKeepsOrDiscardsThePartial() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 33)
    // Silent after 200 kB until the client goes: the cancel always lands mid-transfer.
    server.setResource(
      "/f", TestResource(body: body, etag: Self.etag, faults: TestFaults(stallAfterBytes: 200_000)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var options = Self.fastOptions()
    options.stallTimeout = 60
    let kept = try await Self.run(server.url("/f"), to: .file(file), options: options) { event, download in
      if case .progress(let progress) = event, progress.bytes > 50_000 { download.cancel() }
    }
    #expect(kept.error?.category == .interrupted)
    let saved = try #require(SavedProgress.load(for: file))
    #expect(saved.bytes > 50_000)
    #expect(!Self.exists(file.path))

    let discarded = try await Self.run(server.url("/f"), to: .file(file), options: options) {
      event, download in
      if case .progress = event { download.cancel(keepPartial: false) }
    }
    #expect(discarded.error?.category == .interrupted)
    #expect(!Self.exists(file.path + ".part"))
    #expect(!Self.exists(file.path + ".haul"))
  }

  @Test func rateLimitSlowsTheTransfer() async throws {
    let server = try TestServer()
    // Large enough that socket buffers (which libcurl may drain in one go) are a small part of it.
    let body = TestResource.random(size: 8_000_000, seed: 34)
    server.setResource("/f", TestResource(body: body))
    var options = Self.fastOptions()
    options.rateLimit = 8_000_000
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")), options: options)
    // At 8 MB/s, 8 MB cannot arrive in much under a second (a lower bound: never flaky).
    #expect((outcome.value?.duration ?? 0) > 0.5)
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func aSharedLimitCapsSeveralDownloadsTogether() async throws {
    let server = try TestServer()
    let bodies = (0..<2).map { TestResource.random(size: 4_000_000, seed: 40 + UInt64($0)) }
    for (index, body) in bodies.enumerated() { server.setResource("/f\(index)", TestResource(body: body)) }
    var options = Self.fastOptions()
    options.sharedRateLimit = BandwidthLimit(bytesPerSecond: 8_000_000)
    let directory = try TemporaryDirectory()
    let started = ContinuousClock.now
    async let first = Self.run(server.url("/f0"), to: .file(directory.file("f0")), options: options)
    async let second = Self.run(server.url("/f1"), to: .file(directory.file("f1")), options: options)
    let outcomes = try await [first, second]
    // 8 MB in all at 8 MB/s overall cannot take much under a second (a lower bound: never flaky).
    #expect(ContinuousClock.now - started > .milliseconds(500))
    for (index, outcome) in outcomes.enumerated() {
      #expect(outcome.value != nil)
      #expect(Self.holds(directory.file("f\(index)"), bodies[index]), "file bytes differ")
    }
  }

  @Test func rejectsBadInputBeforeAnyNetwork() {
    #expect(throws: HaulError.self) {
      try Download(url: "gopher://x/y", to: .directory(URL(fileURLWithPath: ".")))
    }
    #expect(throws: HaulError.self) {
      try Download(url: "not a url", to: .directory(URL(fileURLWithPath: ".")))
    }
    var options = DownloadOptions()
    options.headers = [("Range", "bytes=0-")]
    #expect(throws: HaulError.self) {
      try Download(url: "http://127.0.0.1/f", to: .directory(URL(fileURLWithPath: ".")), options: options)
    }
    options.headers = [("X-Bad", "a\r\nInjected: 1")]
    #expect(throws: HaulError.self) {
      try Download(url: "http://127.0.0.1/f", to: .directory(URL(fileURLWithPath: ".")), options: options)
    }
  }
}
