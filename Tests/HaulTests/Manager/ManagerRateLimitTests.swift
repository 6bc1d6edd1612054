import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// A rate limit changed for a running download (aria2's changeOption `max-download-limit`,
/// `haul ui`) reaches it as it goes: no restart, no new request.
@Suite struct ManagerRateLimitTests {
  /// 2 MB from a server that sends 2 MB/s (1 s), held to 250 kB/s once progress showed
  /// 300 kB. What is left then takes at least its size at 250 kB/s, less 500 kB for the bytes
  /// that arrived before the change reached the transfer (a lower bound, never flaky).
  @Test func aLowerLimitReachesTheRunningDownload() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/r", size: 2_000_000, seed: 61, bytesPerSecond: 2_000_000)
    let manager = try fixture.open()
    let log = EventLog(manager)
    let id = try await manager.add(
      fixture.server.url("/r"), to: .directory(fixture.downloads),
      options: DownloadManagerTests.oneConnection())
    var held: Int64 = 0
    #expect(
      await log.wait { event in
        guard case .progress(id, let progress) = event, progress.bytes >= 300_000 else { return false }
        held = progress.bytes
        return true
      })
    let changed = ContinuousClock.now
    var options = try manager.options(of: id).options
    options.rateLimit = 250_000
    try await manager.changeOptions(id, to: options)
    #expect(await idle(manager))
    let ended = ContinuousClock.now
    #expect(manager.download(id)?.state == .complete)
    let exact = fixture.contents("r") == body
    #expect(exact)
    #expect(try manager.options(of: id).options.rateLimit == 250_000, "kept for later runs")
    #expect(fixture.server.requests(for: "/r").count == 1)
    #expect(!log.names(id).contains("restarted"), "\(log.names(id))")
    let left = Double(2_000_000 - held - 500_000)
    #expect(left > 0, "changed only at \(held) bytes")
    #expect(ended - changed > .seconds(left / 250_000), "changed at \(held) bytes")
    await manager.close()
  }
}
