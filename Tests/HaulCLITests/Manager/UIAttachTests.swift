import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul ui` while another process owns the catalog (`haul run`, `haul daemon`, another
/// `haul ui`): it attaches through the owner's control socket, shows the owner's downloads live,
/// its keys act in the owner, quitting leaves the owner running, and when the owner goes the
/// view ends with a message and the terminal put back.
@Suite("haul ui attached to the catalog's owner")
struct UIAttachTests {
  static let leave = "\u{1B}[?1049l"

  private func restored(_ settings: termios) -> Bool {
    settings.c_lflag & tcflag_t(ICANON) != 0 && settings.c_lflag & tcflag_t(ECHO) != 0
      && settings.c_lflag & tcflag_t(ISIG) != 0
  }

  /// Waits until a row drawn after `mark` names `name` and shows `state` with a speed (a live
  /// download: bytes per second and an ETA come from the owner's memory, not from the catalog).
  private func waitForLiveRow(_ terminal: InteractiveTerminal, _ name: String, after mark: Int) async throws {
    try await CatalogFixture.waitUntil("a live row for \(name)") {
      terminal.drawn(after: mark).components(separatedBy: "\u{1B}[").contains { piece in
        piece.contains(name) && piece.contains("/s ") && piece.contains("active")
          && piece.range(of: #"\d+%"#, options: .regularExpression) != nil
          && piece.range(of: #"\d+[hms]"#, options: .regularExpression) != nil
      }
    }
  }

  private func waitForSocket(_ fixture: CatalogFixture) async throws {
    let socket = fixture.catalog.path + ".sock"
    try await CatalogFixture.waitUntil("the control socket answers") {
      (try? UnixSocketClient(path: socket)) != nil
    }
  }

  @Test func attachedToHaulRunItsKeysActThereAndQuittingLeavesItRunning() async throws {
    let server = try TestServer()
    // One connection each at 20 kB/s: 150 s each, far from finished while the keys are typed.
    let slow = ServedFile.serve(2, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 97)
    let fast = ServedFile.serve(1, size: 150_000, on: server, seed: 98, prefix: "fast")
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "-x", "1"] + slow.map(\.url))
    let runner = try fixture.start("run", ["-j", "1", "--json"])
    runner.signal(SIGKILL, after: 600)
    try await waitForSocket(fixture)
    try await CatalogFixture.waitUntil("the first download runs") {
      try await fixture.download(ids[0])?["state"] == "active"
    }

    // From another directory: what it adds goes into its own -d, not the runner's.
    let elsewhere = fixture.directory.file("client")
    try FileManager.default.createDirectory(
      at: elsewhere.appendingPathComponent("out"), withIntermediateDirectories: true)
    let terminal = try InteractiveTerminal(columns: 120, rows: 14)
    try terminal.start(["ui", "--catalog", fixture.catalog.path, "-d", "out"], in: elsewhere)
    try await terminal.waitFor("(owned by process \(runner.pid))")
    try await terminal.waitFor("2 downloads, 1 active")
    try await terminal.waitFor("1 at a time")
    try await waitForLiveRow(terminal, "f0.bin", after: 0)

    // p pauses the selected (first) download in the runner, which starts the next one.
    var mark = terminal.mark
    terminal.type("p")
    try await terminal.waitFor("paused f0.bin", after: mark)
    #expect(try await fixture.download(ids[0])?["state"] == "paused")
    try await CatalogFixture.waitUntil("the runner starts the second download") {
      try await fixture.download(ids[1])?["state"] == "active"
    }
    try await waitForLiveRow(terminal, "f1.bin", after: mark)

    // > lets the runner run two at once; + adds a URL in the runner, which runs it beside the
    // second; the file lands in the client's -d.
    mark = terminal.mark
    terminal.type(">")
    try await terminal.waitFor("2 at a time", after: mark)
    terminal.type("+")
    try await terminal.waitFor("Add URL", after: mark)
    terminal.type(fast[0].url + "\r")
    try await terminal.waitFor("added ", after: mark)
    try await CatalogFixture.waitUntil("the added download completes in the runner") {
      try await fixture.list().contains { $0["url"] == fast[0].url && $0["state"] == "complete" }
    }
    #expect(fixture.contents("client/out/fast0.bin") == fast[0].body)

    // r resumes the first: both slow ones run.
    mark = terminal.mark
    terminal.type("r")
    try await terminal.waitFor("resumed f0.bin", after: mark)
    try await CatalogFixture.waitUntil("both downloads run in the runner") {
      try await fixture.list().filter { $0["state"] == "active" }.count == 2
    }
    try await terminal.waitFor("3 downloads, 2 active", after: mark)

    // l limits the selected (first) download in the runner, as it runs; L sets and lifts the
    // runner's overall limit, which the title shows.
    mark = terminal.mark
    terminal.type("l")
    try await terminal.waitFor("Rate limit of f0.bin (now none", after: mark)
    terminal.type("100K\r")
    try await terminal.waitFor("f0.bin limited to 100 KiB/s", after: mark)
    let limited = try await fixture.download(ids[0])
    #expect(
      limited?["rate_limit"] == "102400" && limited?["state"] == "active", "\(String(describing: limited))")
    terminal.type("L5M\r")
    try await terminal.waitFor("limit 5.00 MiB/s", after: mark)
    mark = terminal.mark
    terminal.type("L0\r")
    try await terminal.waitFor("overall rate limit lifted", after: mark)

    // c cancels the second in the runner.
    mark = terminal.mark
    terminal.type("j")
    try await terminal.waitFor("> f1.bin", after: mark)
    terminal.type("c")
    try await terminal.waitFor("cancelled f1.bin", after: mark)
    #expect(try await fixture.download(ids[1])?["state"] == "removed")

    // It stays listed, selected: r resumes it in the runner, not the row that was next to it.
    mark = terminal.mark
    terminal.type("r")
    try await terminal.waitFor("resumed f1.bin", after: mark)
    #expect(["queued", "active"].contains(try await fixture.download(ids[1])?["state"] ?? ""))

    // q leaves the client; the runner goes on with the first download.
    terminal.type("q")
    let (status, settings) = try await terminal.wait()
    #expect(status == 0, "\(terminal.drawn.suffix(2000))")
    #expect(terminal.drawn.hasSuffix(Self.leave))
    #expect(restored(settings))
    #expect(runner.isRunning, "the runner keeps running")
    #expect(try await fixture.download(ids[0])?["state"] == "active")
    runner.signal(SIGTERM)
    let outcome = await runner.wait()
    #expect(outcome.status == 130, "\(outcome)")
  }

  @Test func attachedToTheDaemonItsKeysActThere() async throws {
    let server = try TestServer()
    let slow = ServedFile.serve(1, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 99)
    let fixture = try CatalogFixture()
    let daemon = try await DaemonProcess.start(in: fixture.directory)
    try await waitForSocket(fixture)
    let id = try #require(try await fixture.add(["--paused", "-d", "out", "-x", "1", slow[0].url]).first)

    let terminal = try InteractiveTerminal(columns: 120, rows: 14)
    try terminal.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await terminal.waitFor("(owned by process \(daemon.child.pid))")
    try await terminal.waitFor("f0.bin")
    var mark = terminal.mark
    terminal.type("r")
    try await terminal.waitFor("resumed f0.bin", after: mark)
    try await waitForLiveRow(terminal, "f0.bin", after: mark)
    #expect(try await fixture.download(id)?["state"] == "active")

    mark = terminal.mark
    terminal.type("p")
    try await terminal.waitFor("paused f0.bin", after: mark)
    #expect(try await fixture.download(id)?["state"] == "paused")

    terminal.type("q")
    let (status, settings) = try await terminal.wait()
    #expect(status == 0, "\(terminal.drawn.suffix(2000))")
    #expect(restored(settings))
    #expect(daemon.child.isRunning, "the daemon keeps running")
    _ = try await daemon.call("aria2.getVersion")
    let outcome = await daemon.stop()
    #expect(outcome.status == 0, "\(outcome)")
  }

  @Test func aSecondUIAttachesToTheFirstAndEndsWhenTheFirstQuits() async throws {
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["--paused", "http://127.0.0.1:9/never.bin"])
    let owner = try InteractiveTerminal(columns: 100, rows: 12)
    try owner.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await owner.waitFor("never.bin")
    try await waitForSocket(fixture)
    let ownerPID = try #require(owner.pid)

    let client = try InteractiveTerminal(columns: 100, rows: 12)
    try client.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await client.waitFor("(owned by process \(ownerPID))")
    try await client.waitFor("never.bin")
    // A key of the client changes the owner: its own screen shows it.
    var mark = owner.mark
    client.type(">")
    try await client.waitFor("5 at a time")
    try await owner.waitFor("5 at a time", after: mark)
    // A download added from another shell shows in both.
    mark = client.mark
    let added = try await fixture.run("add", ["--paused", "http://127.0.0.1:9/also.bin"])
    #expect(added.status == 0, "\(added)")
    try await client.waitFor("also.bin", after: mark)

    // The owner quits: the client says so, puts the terminal back and ends with status 1.
    mark = client.mark
    owner.type("q")
    let ownerEnd = try await owner.wait()
    #expect(ownerEnd.status == 0)
    let (status, settings) = try await client.wait()
    #expect(status == 1, "\(client.drawn.suffix(2000))")
    #expect(restored(settings))
    let after = client.drawn(after: mark)
    let left = try #require(after.range(of: Self.leave, options: .backwards), "\(after.suffix(2000))")
    let said = String(after[left.upperBound...])
    #expect(said.contains("process \(ownerPID), which owned the catalog"), "\(said)")
    #expect(said.contains("haul ui"), "\(said)")
  }
}
