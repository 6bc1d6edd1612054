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
  /// `changeOptions` with only the limit changed, or `setRateLimit`: the same path.
  @Test(arguments: [false, true])
  func aLowerLimitReachesTheRunningDownload(alone: Bool) async throws {
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
    if alone {
      try await manager.setRateLimit(250_000, of: id)
    } else {
      var options = try manager.options(of: id).options
      options.rateLimit = 250_000
      try await manager.changeOptions(id, to: options)
    }
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

  /// A waiting download keeps the limit for its run and lists it; a limit that is not positive
  /// is refused and changes nothing; nil lifts it. Its other options stay as they were.
  @Test func setRateLimitChangesOnlyTheLimit() async throws {
    let fixture = try ManagerFixture()
    _ = fixture.serve("/w", size: 1000, seed: 62)
    let manager = try fixture.open()
    var options = DownloadManagerTests.oneConnection()
    options.headers = [(name: "X-Kept", value: "yes")]
    // Added paused: a 1,000-byte download added running could finish before a pause (it did
    // under AddressSanitizer in CI).
    let id = try await manager.add(
      fixture.server.url("/w"), to: .directory(fixture.downloads), options: options, paused: true)
    try await manager.setRateLimit(300_000, of: id)
    #expect(manager.download(id)?.rateLimit == 300_000)
    #expect(manager.download(id)?.state == .paused)
    var expected = StoredOptions.split(try manager.options(of: id).options).0
    #expect(
      expected.headers == [StoredOptions.Header(name: "X-Kept", value: "yes")] && expected.connections == 1)
    for refused: Int64 in [0, -5] {
      await #expect(throws: HaulError.self) { try await manager.setRateLimit(refused, of: id) }
    }
    #expect(manager.download(id)?.rateLimit == 300_000)
    try await manager.setRateLimit(nil, of: id)
    expected.rateLimit = nil
    #expect(StoredOptions.split(try manager.options(of: id).options).0 == expected)
    #expect(manager.download(id)?.rateLimit == nil)
    await #expect(throws: HaulError.self) {
      try await manager.setRateLimit(1, of: DownloadID("0000000000000001")!)
    }
    await manager.close()
  }
}
