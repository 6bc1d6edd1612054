import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// Several connections per file against the fault server: exact bytes in every case.
@Suite struct SegmentedDownloadTests {
  static let etag = "\"s1\""

  static func options(connections: Int?) -> DownloadOptions {
    var options = DownloadTests.fastOptions()
    options.connections = connections
    return options
  }

  /// Runs with small segments (64 KiB) so that test-sized files split.
  static func run(
    _ url: String, to file: URL, options: DownloadOptions,
    onEvent: (@Sendable (DownloadEvent, Download) -> Void)? = nil
  ) async throws -> DownloadTests.Outcome {
    try await DownloadTests.run(
      url, to: .file(file), options: options, minimumSplit: 64 << 10, onEvent: onEvent)
  }

  static func connectionsSeen(_ events: [DownloadEvent]) -> Int {
    events.compactMap { if case .progress(let p) = $0 { p.connections } else { nil } }.max() ?? 0
  }

  @Test func fourConnectionsProduceExactBytes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 4_000_000, seed: 40)
    server.setResource(
      "/f", TestResource(body: body, etag: Self.etag, faults: TestFaults(bytesPerSecond: 4_000_000)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      server.url("/f"), to: directory.file("f"), options: Self.options(connections: 4))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let ranged = server.requests(for: "/f").filter { $0.header("Range") != nil }
    #expect(Set(ranged.map(\.connectionID)).count >= 3)
    #expect(ranged.allSatisfy { $0.header("If-Range") == Self.etag && $0.status == 206 })
    #expect(Self.connectionsSeen(outcome.events) > 1)
    #expect(!FileManager.default.fileExists(atPath: directory.file("f.haul").path))
  }

  @Test func automaticModeAddsConnectionsOnAThrottledServer() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 6_000_000, seed: 41)
    server.setResource(
      "/f", TestResource(body: body, etag: Self.etag, faults: TestFaults(bytesPerSecond: 1_000_000)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      server.url("/f"), to: directory.file("f"), options: Self.options(connections: nil))
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    // Each connection is capped at 1 MB/s, so more connections raise throughput: it must have grown.
    #expect(Self.connectionsSeen(outcome.events) >= 4)
  }

  @Test func serverWithoutRangesGetsOneConnection() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 42)
    server.setResource("/f", TestResource(body: body, etag: Self.etag, faults: TestFaults(ignoreRange: true)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      server.url("/f"), to: directory.file("f"), options: Self.options(connections: 8))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/f").count == 1)
  }

  @Test func connectionsDyingMidRangeAreRecovered() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 43)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Self.etag,
        faults: TestFaults(dropAfterBytes: 200_000, dropTimes: 4, bytesPerSecond: 4_000_000)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      server.url("/f"), to: directory.file("f"), options: Self.options(connections: 4))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func wrongContentRangeOnSegmentsFallsBackToOneWholeResponse() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 44)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Self.etag, faults: TestFaults(contentRangeShift: 100, bytesPerSecond: 4_000_000)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(
      server.url("/f"), to: directory.file("f"), options: Self.options(connections: 4))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.count == 1)
  }

  /// Cancels a 4-connection download mid-way, leaving several partial ranges on disk.
  /// The resource must stall each response (`stallAfterBytes`) so the cancel lands mid-transfer
  /// however late the event consumer runs.
  static func makeFragmentedPartial(server: TestServer, file: URL) async throws -> ResumeState {
    let once = DownloadTests.Once()
    var options = options(connections: 4)
    options.stallTimeout = 60
    let outcome = try await run(server.url("/f"), to: file, options: options) { event, download in
      if case .progress(let progress) = event, progress.connections >= 2, progress.bytes > 600_000, once() {
        download.cancel()
      }
    }
    #expect(outcome.error?.category == .interrupted)
    guard case .success(let state)? = try StateJournal.load(from: file.path + ".haul") else {
      Issue.record("no saved state")
      return ResumeState(url: "")
    }
    return state
  }

  @Test func resumesSeveralPartialRangesAfterAStop() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 4_000_000, seed: 45)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Self.etag, faults: TestFaults(stallAfterBytes: 400_000, bytesPerSecond: 1_000_000)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let state = try await Self.makeFragmentedPartial(server: server, file: file)
    #expect(state.ranges.count >= 2)
    // What the state claims is exactly the source's bytes.
    let part = try #require(DownloadTests.bytes(URL(fileURLWithPath: file.path + ".part")))
    for range in state.ranges {
      #expect(part[Int(range.start)..<Int(range.end)] == body[Int(range.start)..<Int(range.end)])
    }
    server.clearRequests()
    server.updateFaults("/f") {
      $0.bytesPerSecond = nil
      $0.stallAfterBytes = nil
    }
    let outcome = try await Self.run(server.url("/f"), to: file, options: Self.options(connections: 4))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(file, body)
      #expect(same, "file bytes differ")
    }
    // Only missing bytes were asked for: no range the server served touches a held one.
    let asked = server.requests.compactMap { $0.header("Range") }
    #expect(!asked.isEmpty)
    #expect(!asked.contains("bytes=0-") && server.requests.allSatisfy { $0.header("Range") != nil })
    let served = server.requests.compactMap { $0.contentRange.flatMap(Self.servedRange) }
    #expect(served.count == server.requests.count)
    for range in served {
      #expect(!state.ranges.contains { $0.start < range.upperBound && range.lowerBound < $0.end }, "\(range)")
    }
    // Received beyond the missing bytes: only what was in flight on a connection whose range
    // another one took over (work stealing), at most one receive buffer (1 MiB) each.
    let cut = Int64(max(0, served.count - 1))
    #expect(outcome.value?.bytesReceived ?? .max <= Int64(body.count) - state.heldBytes + cut << 20)
  }

  /// `bytes A-B/TOTAL` as `A..<B+1`.
  static func servedRange(_ contentRange: String) -> Range<Int64>? {
    guard contentRange.hasPrefix("bytes "), let slash = contentRange.firstIndex(of: "/") else { return nil }
    let bounds = contentRange.dropFirst("bytes ".count)[..<slash].split(separator: "-")
    guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]) else { return nil }
    return first..<(last + 1)
  }

  @Test func resourceChangingBetweenResumesIsNeverSpliced() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 4_000_000, seed: 46)
    server.setResource(
      "/f",
      TestResource(
        body: old, etag: "\"old\"", faults: TestFaults(stallAfterBytes: 400_000, bytesPerSecond: 1_000_000)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    _ = try await Self.makeFragmentedPartial(server: server, file: file)
    let new = TestResource.random(size: 4_000_000, seed: 47)
    server.setResource("/f", TestResource(body: new, etag: "\"new\""))
    let outcome = try await Self.run(server.url("/f"), to: file, options: Self.options(connections: 4))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(file, new)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.count >= 1)
  }
}
