import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A subcommand that talks to a stopped owner (SIGSTOP, Ctrl-Z) gives up after a few seconds,
/// names the owner, and exits 10; what the owner had received it still carries out on SIGCONT.
@Suite("stopped owner")
struct StoppedOwnerTests {
  @Test func addAndPauseGiveUpOnAStoppedOwner() async throws {
    let server = try TestServer()
    // Silent after 1000 bytes: the runner keeps running until the test ends it. Two, for the
    // pause below ends one: with none left to run, the runner would end, and whether it read
    // the add before that would depend on which of the two connections its threads served first.
    let stalled = ServedFile.serve(2, size: 100_000, on: server, stallAfter: 1000, seed: 41)
    let fresh = ServedFile.serve(1, size: 1000, on: server, seed: 42, prefix: "fresh")
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "-x", "1"] + stalled.map(\.url))
    let runner = try fixture.start("run", ["-q"])
    runner.signal(SIGKILL, after: 600)
    defer { runner.signal(SIGKILL) }
    try await CatalogFixture.waitUntil("the control socket answers") {
      (try? UnixSocketClient(path: fixture.catalog.path + ".sock")) != nil
    }
    runner.signal(SIGSTOP)

    let adding = try fixture.start("add", ["-d", "out", "--paused", fresh[0].url])
    // Bounds a hang (the add gives up after seconds): killed, it would not exit 10.
    adding.signal(SIGKILL, after: 120)
    let added = await adding.wait()
    #expect(added.status == 10 && !added.signaled, "\(added)")
    #expect(added.stdout.isEmpty, "\(added)")
    #expect(added.stderr.contains("haul: process \(runner.pid), which owns the catalog"), "\(added)")
    #expect(added.stderr.contains("kill -CONT \(runner.pid)"), "\(added)")
    #expect(added.stderr.contains("may still be carried out"), "\(added)")

    let pausing = try fixture.start("pause", [ids[0]])
    pausing.signal(SIGKILL, after: 120)
    let paused = await pausing.wait()
    #expect(paused.status == 10 && !paused.signaled, "\(paused)")

    // Continued, the owner carries out what it had received (it cannot be taken back).
    runner.signal(SIGCONT)
    try await CatalogFixture.waitUntil("the add reaches the catalog") {
      try await fixture.list().contains { $0["url"] == fresh[0].url }
    }
    try await CatalogFixture.waitUntil("the pause reaches the catalog") {
      try await fixture.download(ids[0])?["state"] == "paused"
    }
  }
}
