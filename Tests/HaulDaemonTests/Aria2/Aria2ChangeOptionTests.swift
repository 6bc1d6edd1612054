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
}
