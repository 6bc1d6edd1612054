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

  /// The download's own limit lowered while it runs holds from then on. The server sends
  /// 200 kB/s until the limit is set to 250 kB/s, then 8 MB/s: what it had not sent by then
  /// (at least) takes its size at 250 kB/s, less one receive buffer (1 MiB: the chunk taken
  /// last, whose debt is never waited out) and one burst. A lower bound, never flaky, however
  /// late the progress event comes; without the limit the rest takes a tenth of a second. One
  /// connection: no new request, so the limit reached the transfer that was running.
  @Test func loweringTheOwnLimitHoldsAtOnce() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 142)
    server.setResource(
      "/f", TestResource(body: body, etag: "\"r\"", faults: TestFaults(bytesPerSecond: 200_000)))
    let directory = try TemporaryDirectory()
    let lowered = Locked<(sent: Int, at: ContinuousClock.Instant)?>(nil)
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(directory.file("f"))) {
      event, download in
      guard case .progress(let progress) = event, progress.bytes >= 100_000,
        lowered.withLock({ $0 == nil })
      else { return }
      #expect((try? download.setRateLimit(250_000)) != nil)
      server.updateFaults("/f") { $0.bytesPerSecond = 8_000_000 }
      let sent = server.bodyBytesSent(for: "/f")
      lowered.withLock { $0 = (sent, .now) }
    }
    let ended = ContinuousClock.now
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let change = try #require(lowered.withLock { $0 })
    let left = Double(2_000_000 - change.sent - (1 << 20) - 25_000)
    #expect(left > 0, "lowered only at \(change.sent) bytes sent")
    #expect(ended - change.at > .seconds(left / 250_000), "lowered at \(change.sent) bytes sent")
    #expect(server.requests(for: "/f").count == 1)
  }
}
