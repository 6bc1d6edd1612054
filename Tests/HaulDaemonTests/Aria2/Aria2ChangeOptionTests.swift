import Foundation
import Haul
import HaulRPC
import Testing

/// `changeOption`/`changeGlobalOption` answer "OK" only for what they change.
@Suite struct Aria2ChangeOptionTests {
  @Test func aWaitingDownloadsDestinationIsRefusedNotIgnored() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/w.bin", size: 1_000, seed: 9)
    let elsewhere = fixture.directory.file("elsewhere")
    let gid = try await fixture.call(
      "aria2.addUri", [[.string(fixture.server.url("/w.bin"))], ["out": "w.bin", "pause": "true"]])
    let before = try await fixture.call("aria2.getOption", [gid])
    let refused: [JSONValue] = [
      ["dir": .string(elsewhere.path)], ["out": "other.bin"], ["pause": "false"],
      ["max-concurrent-downloads": "2"], ["max-overall-download-limit": "1M"],
    ]
    for change in refused {
      await #expect(throws: RPCError.self, "\(change.serializedString)") {
        try await fixture.call("aria2.changeOption", [gid, change])
      }
    }
    // Sending back what getOption shows (clients do) changes nothing and is fine.
    let same: JSONValue = ["dir": before["dir"] ?? .null, "out": before["out"] ?? .null, "split": "3"]
    #expect(try await fixture.call("aria2.changeOption", [gid, same]) == "OK")
    let checksum = "sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    for change: JSONValue in [["out": "x.bin"], ["pause": "true"], ["checksum": .string(checksum)]] {
      await #expect(throws: RPCError.self, "\(change.serializedString)") {
        try await fixture.call("aria2.changeGlobalOption", [change])
      }
    }
    // A changed referer replaces the last one; it is never sent twice.
    for referer in ["https://a/", "https://b/"] {
      #expect(try await fixture.call("aria2.changeOption", [gid, ["referer": .string(referer)]]) == "OK")
    }
    let after = try await fixture.call("aria2.getOption", [gid])
    let status = try await fixture.call("aria2.tellStatus", [gid, ["status"]])
    await fixture.stop()
    #expect(after["dir"] == before["dir"])
    #expect(after["out"] == "w.bin")
    #expect(after["split"] == "3")
    #expect(after["header"] == "Referer: https://b/", "\(after["header"]?.serializedString ?? "none")")
    #expect(status["status"] == "paused")
  }

  /// `max-download-limit` changed on an active download reaches it as it goes, as in aria2: no
  /// restart, no new request. The server sends 20 kB/s until the limit is set to 250 KiB/s
  /// (calls took seconds under ThreadSanitizer), then 8 MB/s: what it had not sent by then (at
  /// least) takes its size at that rate, less one receive buffer (1 MiB: the chunk taken last)
  /// and one burst. A lower bound, never flaky, however slow the calls; without the limit the
  /// rest takes a tenth of a second.
  @Test func aDownloadLimitReachesAnActiveDownload() async throws {
    let fixture = try await DaemonFixture()
    let body = fixture.serve("/a.bin", size: 2_000_000, seed: 12, bytesPerSecond: 20_000)
    let gid = try await fixture.call(
      "aria2.addUri", [[.string(fixture.server.url("/a.bin"))], ["split": "1"]])
    var held: Int64 = 0
    let deadline = ContinuousClock.now + .seconds(60)
    while held < 20_000, ContinuousClock.now < deadline {
      let status = try await fixture.call("aria2.tellStatus", [gid, ["completedLength"]])
      held = status["completedLength"]?.string.flatMap { Int64($0) } ?? 0
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(try await fixture.call("aria2.changeOption", [gid, ["max-download-limit": "250K"]]) == "OK")
    fixture.server.updateFaults("/a.bin") { $0.bytesPerSecond = 8_000_000 }
    let sent = fixture.server.bodyBytesSent(for: "/a.bin")
    let changed = ContinuousClock.now
    let done = try await fixture.waitFor(gid.string ?? "", status: "complete")
    let ended = ContinuousClock.now
    let options = try await fixture.call("aria2.getOption", [gid])
    await fixture.stop()
    #expect(done["status"] == "complete")
    #expect(fixture.contents("a.bin") == body)
    #expect(options["max-download-limit"] == "256000")
    #expect(fixture.server.requests(for: "/a.bin").count == 1, "restarted")
    let left = Double(2_000_000 - sent - (1 << 20) - 25_600)
    #expect(left > 0, "changed only at \(sent) bytes sent")
    #expect(ended - changed > .seconds(left / 256_000), "changed at \(sent) bytes sent")
  }
}
