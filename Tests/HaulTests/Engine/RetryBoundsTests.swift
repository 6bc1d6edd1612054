import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// A broken server cannot keep a download busy forever (issue 11 part 3), and failing fast
/// where waiting cannot help (issue 16): every failure ends within bounded attempts, with the
/// right category and a message that says what the server did.
@Suite struct RetryBoundsTests {
  typealias Support = DownloadTests

  static func files(in directory: TemporaryDirectory) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
  }

  @Test func aServerThatCutsEveryWholeResponseRunsOutOfRestarts() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 101)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Support.etag, faults: TestFaults(ignoreRange: true, dropAfterBytes: 1_000_000)))
    let directory = try TemporaryDirectory()
    let outcome = try await Support.run(server.url("/f"), to: .file(directory.file("f")))
    let error = try #require(outcome.error)
    #expect(error.category == .network)
    #expect(error.message.contains("restarts from byte 0"), "\(error.message)")
    #expect(error.message.contains("the server sent the whole file"), "\(error.message)")
    #expect(outcome.restarts.count == 5)
    // The first response, then one per restart allowed, then the one that was one too many.
    #expect(server.requests(for: "/f").count == 7)
    // What was held is kept for a later run.
    #expect(SavedProgress.load(for: directory.file("f"))?.bytes == 1_000_000)
  }

  @Test func aServerAlternatingWholeAndPartialResponsesEnds() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 102)
    // Last-Modified only: with a strong ETag the whole responses are stopped and the range
    // asked for again without If-Range (the next test).
    server.setResource(
      "/f",
      TestResource(
        body: body, lastModified: Support.date,
        faults: TestFaults(dropAfterBytes: 1_000_000, alternateIgnoringRange: true)))
    let directory = try TemporaryDirectory()
    let outcome = try await Support.run(server.url("/f"), to: .file(directory.file("f")))
    let error = try #require(outcome.error)
    #expect([.network, .protocol].contains(error.category))
    #expect(error.message.contains("gave up"), "\(error.message)")
    #expect(server.requests(for: "/f").count <= 14)
    // Progress came only once (to 2 MB); a restart to byte 0 never reset the budget.
    #expect(outcome.retries.map(\.attempt).max() ?? 0 >= 2)
  }

  /// With a strong ETag, each whole response of that ETag is stopped and the range asked for
  /// again: the download completes, exactly, in a bounded number of requests.
  @Test func aServerAlternatingWholeAndPartialResponsesWithAStrongETagCompletes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 104)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Support.etag,
        faults: TestFaults(dropAfterBytes: 1_000_000, alternateIgnoringRange: true)))
    let directory = try TemporaryDirectory()
    let outcome = try await Support.run(server.url("/f"), to: .file(directory.file("f")))
    #expect(outcome.error == nil)
    do {
      let same = Support.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.isEmpty)
    #expect(server.requests(for: "/f").count <= 8)
  }

  @Test func anAbsurdLengthStopsBeforeTheBody() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1_000_000, seed: 103)
    server.setResource(
      "/f", TestResource(body: body, etag: Support.etag, faults: TestFaults(claimedLength: 1 << 60)))
    let directory = try TemporaryDirectory()
    let outcome = try await Support.run(server.url("/f"), to: .file(directory.file("f")))
    let error = try #require(outcome.error)
    #expect(error.category == .fileSystem)
    #expect(error.category.exitCode == 3)
    #expect(error.message.contains("needs 1.00 EiB"), "\(error.message)")
    #expect(error.message.contains("free"), "\(error.message)")
    #expect(server.requests(for: "/f").count == 1)
    #expect(outcome.started.isEmpty, "the response should not have been accepted")
    #expect(try Self.files(in: directory).isEmpty)
  }

  @Test func aHostThatDoesNotResolveFailsAtOnce() async throws {
    var options = Support.fastOptions()
    options.maxAttemptsWithoutProgress = 10
    let directory = try TemporaryDirectory()
    let outcome = try await Support.run(
      "http://nonexistent.invalid/f", to: .file(directory.file("f")), options: options)
    let error = try #require(outcome.error)
    #expect(error.category == .network)
    #expect(outcome.retries.isEmpty)
    #expect(try Self.files(in: directory).isEmpty)
  }

  /// Nothing ever answered: three attempts at most, a second apart at most, and no files left.
  /// Port 1, which no test binds (see `freeLoopbackPort`): a port freed by a stopped server can
  /// be taken by another test's server meanwhile, which then answers.
  @Test func aRefusedConnectionBeforeAnyByteGetsAShortBudget() async throws {
    var options = DownloadOptions()
    options.connections = 1
    options.retryBaseDelay = 0.05
    let directory = try TemporaryDirectory()
    let outcome = try await Support.run(
      "http://127.0.0.1:1/f", to: .file(directory.file("f")), options: options)
    #expect(outcome.error?.category == .network)
    #expect(outcome.retries.count == 2)
    #expect(outcome.retries.allSatisfy { $0.delay <= 1 && $0.maxAttempts == 3 })
    #expect(outcome.error?.message.contains("gave up after 3 attempts") == true)
    #expect(try Self.files(in: directory).isEmpty)
  }

  @Test func noRetriesAndUnlimitedRetries() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 104)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    server.enqueue("/f", .status(503))
    var none = Support.fastOptions()
    none.maxAttemptsWithoutProgress = 0
    let once = try await Support.run(server.url("/f"), to: .file(directory.file("f")), options: none)
    #expect(once.error?.category == .server)
    #expect(once.retries.isEmpty)
    #expect(once.error?.message.contains("gave up after 1 attempt without progress") == true)
    #expect(server.requests(for: "/f").count == 1)
    #expect(try Self.files(in: directory).isEmpty, "a failure before any byte leaves nothing")

    for _ in 0..<12 { server.enqueue("/f", .status(503)) }
    var unlimited = Support.fastOptions()
    unlimited.maxAttemptsWithoutProgress = .max
    let many = try await Support.run(server.url("/f"), to: .file(directory.file("f")), options: unlimited)
    #expect(many.error == nil)
    #expect(many.retries.count == 12)
    #expect(many.retries.allSatisfy { $0.maxAttempts == .max })
    let same = Support.holds(directory.file("f"), body)
    #expect(same, "file bytes differ")
  }

  /// After `cancel()` the `Download` is spent: `run()` says so and fetches nothing; a new
  /// `Download` resumes the kept bytes.
  @Test func aCancelledDownloadSaysANewOneIsNeeded() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 105)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Support.etag, faults: TestFaults(stallAfterBytes: 200_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var options = Support.fastOptions()
    options.stallTimeout = 60
    let download = try Download(
      url: server.url("/f"), to: .file(file), options: options, transport: try #require(CurlTransport.shared))
    let events = Task {
      for await event in download.events {
        if case .progress(let progress) = event, progress.bytes > 100_000 { download.cancel() }
      }
    }
    var first: HaulError?
    do throws(HaulError) { try await download.run() } catch { first = error }
    await events.value
    #expect(first?.category == .interrupted)
    let requests = server.requests(for: "/f").count
    var again: HaulError?
    do throws(HaulError) { try await download.run() } catch { again = error }
    #expect(again?.category == .interrupted)
    #expect(again?.message.contains("cancelled") == true)
    #expect(again?.hint?.contains("new Download") == true)
    #expect(server.requests(for: "/f").count == requests)

    let fresh = try await Support.run(server.url("/f"), to: .file(file), options: options)
    #expect(fresh.error == nil)
    #expect((fresh.value?.resumedFrom ?? 0) >= 100_000)
    let same = Support.holds(file, body)
    #expect(same, "file bytes differ")
  }
}
