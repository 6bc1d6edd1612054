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

  /// A limit shared with other downloads, lifted while this one runs, on a server that paces
  /// each connection to 1 MB/s. Under 500 kB/s one connection is all it takes (the shared
  /// limit counts from the start, as the download's own does); once the limit is lifted,
  /// connections are added within a second, and kept: the burst of what the server sent ahead
  /// while the limit held is not taken for one connection's speed. Before, the count stayed at
  /// one for the rest of the download.
  @Test func liftingASharedLimitAddsConnections() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 8_000_000, seed: 141)
    server.setResource(
      "/f", TestResource(body: body, etag: "\"r\"", faults: TestFaults(bytesPerSecond: 1_000_000)))
    let overall = BandwidthLimit(bytesPerSecond: 500_000)
    var options = DownloadTests.fastOptions()
    options.connections = nil
    options.sharedRateLimit = overall
    let directory = try TemporaryDirectory()
    // The most connections progress showed before the lift and after it, and the count when
    // 5 MB were held (a step back would have left one).
    let most = Locked((before: 0, after: 0, atFiveMB: 0))
    let outcome = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("f")), options: options, minimumSplit: 64 << 10
    ) { event, _ in
      guard case .progress(let progress) = event else { return }
      let lifted = overall.bytesPerSecond == nil
      most.withLock { most in
        if lifted {
          most.after = max(most.after, progress.connections)
          if most.atFiveMB == 0, progress.bytes >= 5_000_000 { most.atFiveMB = progress.connections }
        } else {
          most.before = max(most.before, progress.connections)
        }
      }
      if !lifted, progress.bytes >= 600_000 { overall.bytesPerSecond = nil }
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
}
