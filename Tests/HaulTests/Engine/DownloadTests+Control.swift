import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

// Retries and failures; pause, resume, cancel; rate limits; bad input.
extension DownloadTests {
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
    // Port 1: no test binds it (a port freed by a stopped test server was once taken by another
    // test's server running at the same time, which then served the download).
    var options = Self.fastOptions()
    options.maxAttemptsWithoutProgress = 2
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      "http://127.0.0.1:1/f", to: .file(directory.file("f")), options: options)
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
    // This `Download` is spent: the hint must not say to call its `run()` again.
    #expect(kept.error?.hint?.contains("a new `Download` of the same URL and destination") == true, "\(kept)")
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

  /// Stopped while waiting to retry, before any byte: nothing is promised to resume.
  @Test func aStopBeforeAnyByteSaysSo() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 1_000, seed: 35)))
    // An hour's wait (the longest Retry-After honoured): the stop lands in it however late a
    // loaded machine runs the event's handler (with 30 s, a CI run once retried first).
    server.enqueue("/f", .status(503, headers: [("Retry-After", "3600")]))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let outcome = try await Self.run(server.url("/f"), to: .file(file)) { event, download in
      if case .retrying = event { download.cancel() }
    }
    #expect(outcome.error?.category == .interrupted)
    #expect(outcome.error?.message == "stopped before any byte was saved" && outcome.error?.hint == nil)
    #expect(!Self.exists(file.path + ".part") && !Self.exists(file.path + ".haul"))
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

  /// Downloads held back by one limit take turns. They used to wake at one instant, and the
  /// one the event loop looked at first took every round: the other got nothing until it was
  /// done. Each round's winner is now drawn, so when one download ends (20 rounds of 100 KB
  /// here) the other holds far more than 2 rounds' worth (fails by chance about once in 10,000).
  @Test func downloadsUnderASharedLimitTakeTurns() async throws {
    let server = try TestServer()
    let bodies = (0..<2).map { TestResource.random(size: 2_000_000, seed: 44 + UInt64($0)) }
    for (index, body) in bodies.enumerated() { server.setResource("/t\(index)", TestResource(body: body)) }
    var options = Self.fastOptions()
    options.sharedRateLimit = BandwidthLimit(bytesPerSecond: 1_000_000)
    let directory = try TemporaryDirectory()
    // Bytes each holds by its progress events, and what the other held when one completed.
    let held = Locked([Int64](repeating: 0, count: 2))
    let atFirstEnd = Locked<Int64?>(nil)
    func observe(_ index: Int) -> @Sendable (DownloadEvent, Download) -> Void {
      { event, _ in
        switch event {
        case .progress(let progress): held.withLock { $0[index] = progress.bytes }
        case .completed:
          let other = held.withLock { $0[1 - index] }
          atFirstEnd.withLock { if $0 == nil { $0 = other } }
        default: break
        }
      }
    }
    async let first = Self.run(
      server.url("/t0"), to: .file(directory.file("t0")), options: options, onEvent: observe(0))
    async let second = Self.run(
      server.url("/t1"), to: .file(directory.file("t1")), options: options, onEvent: observe(1))
    let outcomes = try await [first, second]
    for (index, outcome) in outcomes.enumerated() {
      #expect(outcome.value != nil)
      #expect(Self.holds(directory.file("t\(index)"), bodies[index]), "file bytes differ")
    }
    let other = try #require(atFirstEnd.withLock { $0 })
    #expect(other >= 200_000, "the other download held \(other) bytes when the first completed")
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
