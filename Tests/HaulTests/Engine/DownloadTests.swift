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

  /// A redirect to a scheme haul does not follow is the server's doing: a protocol error that
  /// says so (exit 7), not "unusable URL" (exit 2, as for a bad URL given), and no file.
  @Test(arguments: ["file:///etc/passwd", "ftp://user:secret@127.0.0.1:1/x"])
  func redirectToAnotherSchemeIsTheServersDoing(_ location: String) async throws {
    let server = try TestServer()
    server.setRedirect("/start", to: location)
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/start"), to: .directory(directory.url))
    let error = try #require(outcome.error)
    #expect(error.category == .protocol, "\(error.message)")
    let scheme = location.prefix { $0 != ":" }
    #expect(error.message.hasPrefix("the server redirected to \(scheme)://…, which"), "\(error.message)")
    #expect(!error.message.contains("secret"))
    #expect(error.hint?.contains("Location") == true)
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
    #expect(refused.error?.hint == LibraryWording.continueOrReplaceTarget)
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
}
