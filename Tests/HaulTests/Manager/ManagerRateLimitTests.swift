import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// A rate limit changed for a running download (aria2's changeOption `max-download-limit`,
/// `haul ui`) reaches it as it goes: no restart, no new request.
@Suite struct ManagerRateLimitTests {
  /// 2 MB from a server that sends 200 kB/s until the download's limit is set to 250 kB/s,
  /// then 8 MB/s: what it had not sent by then (at least) takes its size at 250 kB/s, less one
  /// receive buffer (1 MiB: the chunk taken last) and one burst. A lower bound, never flaky,
  /// however late events come; without the limit the rest takes a tenth of a second.
  @Test func aLowerLimitReachesTheRunningDownload() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/r", size: 2_000_000, seed: 61, bytesPerSecond: 200_000)
    let manager = try fixture.open()
    let log = EventLog(manager)
    let id = try await manager.add(
      fixture.server.url("/r"), to: .directory(fixture.downloads),
      options: DownloadManagerTests.oneConnection())
    #expect(
      await log.wait { event in
        guard case .progress(id, let progress) = event else { return false }
        return progress.bytes >= 100_000
      })
    var options = try manager.options(of: id).options
    options.rateLimit = 250_000
    try await manager.changeOptions(id, to: options)
    fixture.server.updateFaults("/r") { $0.bytesPerSecond = 8_000_000 }
    let sent = fixture.server.bodyBytesSent(for: "/r")
    let changed = ContinuousClock.now
    #expect(await idle(manager))
    let ended = ContinuousClock.now
    #expect(manager.download(id)?.state == .complete)
    let exact = fixture.contents("r") == body
    #expect(exact)
    #expect(try manager.options(of: id).options.rateLimit == 250_000, "kept for later runs")
    #expect(fixture.server.requests(for: "/r").count == 1)
    #expect(!log.names(id).contains("restarted"), "\(log.names(id))")
    let left = Double(2_000_000 - sent - (1 << 20) - 25_000)
    #expect(left > 0, "changed only at \(sent) bytes sent")
    #expect(ended - changed > .seconds(left / 250_000), "changed at \(sent) bytes sent")
    await manager.close()
  }
}
