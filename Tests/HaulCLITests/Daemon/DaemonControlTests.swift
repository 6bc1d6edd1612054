import Foundation
import HaulRPC
import HaulTestSupport
import Testing

/// While `haul daemon` owns the catalog, the subcommands act through it (its control socket).
@Suite("haul daemon and the subcommands")
struct DaemonControlTests {
  @Test func addPauseAndRemoveFromAnotherShellGoThroughTheDaemon() async throws {
    let directory = try TemporaryDirectory()
    let server = try TestServer()
    defer { server.stop() }
    let body = TestResource.random(size: 50_000, seed: 91)
    server.setResource("/sub.bin", TestResource(body: body, etag: "\"91\""))
    let daemon = try await DaemonProcess.start(in: directory)
    let catalog = directory.file("catalog.sqlite").path
    let added = try await runHaul([
      "add", "--catalog", catalog, "--paused", "-d", directory.file("downloads").path, server.url("/sub.bin"),
    ])
    let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    let listed = try await daemon.call("aria2.tellWaiting", [0, 10, ["gid", "status"]])
    let resumed = try await runHaul(["resume", "--catalog", catalog, id])
    try await daemon.waitFor([.string(id)], status: "complete", seconds: 60)
    let removed = try await runHaul(["rm", "--catalog", catalog, id])
    let after = try await daemon.call("aria2.tellStopped", [0, 10, ["gid"]])
    let outcome = await daemon.stop()
    #expect(added.status == 0, "\(added)")
    #expect(id.count == 16)
    #expect(listed == [["gid": .string(id), "status": "paused"]])
    #expect(resumed.status == 0, "\(resumed)")
    #expect(removed.status == 0, "\(removed)")
    #expect(after == [])
    #expect(
      FileManager.default.contents(atPath: directory.file("downloads/sub.bin").path).map(Array.init) == body)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(!FileManager.default.fileExists(atPath: catalog + ".sock"), "the socket goes with the daemon")
  }
}
