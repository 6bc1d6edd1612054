import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// `--limit-rate` in automatic mode: connections that could only share the limit are not opened
/// (before: always 4 at the first step, 16 when the first window came out slow).
@Suite struct RateLimitConnectionsTests {
  @Test func automaticModeUnderALimitStaysFew() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 140)
    server.setResource("/f", TestResource(body: body, etag: "\"r\""))
    var options = DownloadTests.fastOptions()
    options.connections = nil
    options.rateLimit = 1_000_000
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("f")), options: options, minimumSplit: 64 << 10)
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let most = outcome.events.compactMap { if case .progress(let p) = $0 { p.connections } else { nil } }
      .max()
    #expect((most ?? 0) <= 3, "connections: \(String(describing: most))")
    #expect(server.connectionCount <= 3, "\(server.connectionCount) connections")
  }

  /// A limit lifted while the download runs, on a server that paces each connection to
  /// 1 MB/s: a limit shared with other downloads (`BandwidthLimit`), or the download's own
  /// (`Download.setRateLimit`). Under 500 kB/s one connection is all it takes (a shared limit
  /// counts from the start, as the download's own does); once the limit is lifted,
  /// connections are added within a second, and kept: the burst of what the server sent ahead
  /// while the limit held is not taken for one connection's speed. Before, the count stayed at
  /// one for the rest of the download, and the own limit could not change.
  @Test(arguments: [false, true])
  func liftingALimitAddsConnections(own: Bool) async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 8_000_000, seed: 141)
    server.setResource(
      "/f", TestResource(body: body, etag: "\"r\"", faults: TestFaults(bytesPerSecond: 1_000_000)))
    let overall = BandwidthLimit(bytesPerSecond: own ? nil : 500_000)
    var options = DownloadTests.fastOptions()
    options.connections = nil
    options.sharedRateLimit = overall
    if own { options.rateLimit = 500_000 }
    let directory = try TemporaryDirectory()
    // The most connections progress showed before the lift and after it, and the count when
    // 5 MB were held (a step back would have left one).
    let most = Locked((before: 0, after: 0, atFiveMB: 0))
    let outcome = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("f")), options: options, minimumSplit: 64 << 10
    ) { event, download in
      guard case .progress(let progress) = event else { return }
      let lifted = (own ? download.rateLimit : overall.bytesPerSecond) == nil
      most.withLock { most in
        if lifted {
          most.after = max(most.after, progress.connections)
          if most.atFiveMB == 0, progress.bytes >= 5_000_000 { most.atFiveMB = progress.connections }
        } else {
          most.before = max(most.before, progress.connections)
        }
      }
      guard !lifted, progress.bytes >= 600_000 else { return }
      if own {
        #expect(throws: HaulError.self) { try download.setRateLimit(0) }
        #expect(download.rateLimit == 500_000)
        #expect((try? download.setRateLimit(nil)) != nil)
      } else {
        overall.bytesPerSecond = nil
      }
    }
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let seen = most.withLock { $0 }
    #expect(seen.before == 1, "\(seen)")
    #expect(seen.after >= 4 && seen.atFiveMB >= 4, "\(seen)")
  }

  /// The download's own limit lowered while it runs holds from then on: 2 MB from a server
  /// that sends 2 MB/s (1 s), held to 250 kB/s once progress showed 500 kB. What is left
  /// then takes at least its size at 250 kB/s, less 300 kB for the bytes that arrived before
  /// the change reached the transfer and one burst (a lower bound, never flaky). One
  /// connection: no new request, so the limit reached the transfer that was running.
  @Test func loweringTheOwnLimitHoldsAtOnce() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 142)
    server.setResource(
      "/f", TestResource(body: body, etag: "\"r\"", faults: TestFaults(bytesPerSecond: 2_000_000)))
    let directory = try TemporaryDirectory()
    let lowered = Locked<(bytes: Int64, at: ContinuousClock.Instant)?>(nil)
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(directory.file("f"))) {
      event, download in
      guard case .progress(let progress) = event, progress.bytes >= 500_000 else { return }
      let first = lowered.withLock { lowered in
        defer { lowered = lowered ?? (progress.bytes, .now) }
        return lowered == nil
      }
      if first { #expect((try? download.setRateLimit(250_000)) != nil) }
    }
    let ended = ContinuousClock.now
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let change = try #require(lowered.withLock { $0 })
    let left = Double(2_000_000 - change.bytes - 300_000)
    #expect(left > 0, "lowered only at \(change.bytes) bytes")
    #expect(ended - change.at > .seconds(left / 250_000), "lowered at \(change.bytes) bytes")
    #expect(server.requests(for: "/f").count == 1)
  }
}
