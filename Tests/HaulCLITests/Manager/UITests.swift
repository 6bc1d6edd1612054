import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul ui` through the real binary on a pseudo-terminal: keys change the catalog (checked
/// with `haul ls` from outside), resizing redraws, and every way out puts the terminal back.
@Suite("haul ui")
struct UITests {
  static let leave = "\u{1B}[?1049l"
  static let enter = "\u{1B}[?1049h"

  private func restored(_ settings: termios) -> Bool {
    settings.c_lflag & tcflag_t(ICANON) != 0 && settings.c_lflag & tcflag_t(ECHO) != 0
      && settings.c_lflag & tcflag_t(ISIG) != 0
  }

  @Test func keysDriveTheCatalogAndQuitLeavesEverythingSaved() async throws {
    let server = try TestServer()
    // One connection each at 20 kB/s: far from finished while the keys are typed.
    let slow = ServedFile.serve(2, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 95)
    let fast = ServedFile.serve(1, size: 150_000, on: server, seed: 96, prefix: "fast")
    let fixture = try CatalogFixture()
    let first = try #require(try await fixture.add(["-d", "out", "-x", "1", slow[0].url]).first)
    let second = try #require(try await fixture.add(["-d", "out", "-x", "1", "--paused", slow[1].url]).first)
    let terminal = try InteractiveTerminal(columns: 100, rows: 14)
    try terminal.start(["ui", "--catalog", fixture.catalog.path, "-d", "out"], in: fixture.directory.url)
    try await terminal.waitFor(Self.enter)
    try await terminal.waitFor("f1.bin")
    try await terminal.waitFor("2 downloads, 1 active")

    // j selects the second row, r resumes it.
    var mark = terminal.mark
    terminal.type("j")
    try await terminal.waitFor("> f1.bin", after: mark)
    terminal.type("r")
    try await terminal.waitFor("resumed f1.bin", after: mark)
    #expect(["queued", "active"].contains(try await fixture.download(second)?["state"] ?? ""))

    // l sets its own rate limit, L the overall one (the title shows it); kept in the catalog.
    mark = terminal.mark
    terminal.type("l")
    try await terminal.waitFor("Rate limit of f1.bin (now none", after: mark)
    terminal.type("300K\r")
    try await terminal.waitFor("f1.bin limited to 300 KiB/s", after: mark)
    #expect(try await fixture.download(second)?["rate_limit"] == "307200")
    mark = terminal.mark
    terminal.type("L")
    try await terminal.waitFor("Rate limit of all downloads together (now none", after: mark)
    terminal.type("1M\r")
    try await terminal.waitFor("all downloads limited to 1.00 MiB/s together", after: mark)
    try await terminal.waitFor("limit 1.00 MiB/s", after: mark)

    // Up arrow, then p pauses the first.
    mark = terminal.mark
    terminal.type("\u{1B}[A")
    try await terminal.waitFor("> f0.bin", after: mark)
    terminal.type("p")
    try await terminal.waitFor("paused f0.bin", after: mark)
    #expect(try await fixture.download(first)?["state"] == "paused")

    // + opens the prompt; Enter adds the URL into -d's directory, and it runs at once.
    mark = terminal.mark
    terminal.type("+")
    try await terminal.waitFor("Add URL", after: mark)
    terminal.type(fast[0].url + "\r")
    try await terminal.waitFor("added ", after: mark)
    try await CatalogFixture.waitUntil("the added download completes") {
      try await fixture.list().contains { $0["url"] == fast[0].url && $0["state"] == "complete" }
    }
    #expect(fixture.contents("out/fast0.bin") == fast[0].body)

    // d asks first: n keeps it, y removes it (its files stay).
    mark = terminal.mark
    terminal.type("d")
    try await terminal.waitFor("Remove f0.bin", after: mark)
    terminal.type("n")
    try await terminal.waitFor("nothing removed", after: mark)
    #expect(try await fixture.download(first)?["state"] == "paused")
    mark = terminal.mark
    terminal.type("\u{1B}[3~")
    try await terminal.waitFor("Remove f0.bin", after: mark)
    terminal.type("y")
    try await terminal.waitFor("removed f0.bin", after: mark)
    #expect(try await fixture.download(first).map { $0["state"] == "removed" } ?? true)

    // A resize redraws the whole screen at the new size.
    mark = terminal.mark
    terminal.resize(columns: 50, rows: 10)
    try await terminal.waitFor("\u{1B}[2J", after: mark)
    try await terminal.waitFor("\u{1B}[10;1H", after: mark)

    // q leaves: the terminal is as it was, the rest stays in the catalog for the next run.
    mark = terminal.mark
    terminal.type("q")
    let (status, settings) = try await terminal.wait()
    #expect(status == 0, "\(terminal.drawn.suffix(2000))")
    #expect(terminal.drawn.hasSuffix(Self.leave), "the alternate screen is left last")
    #expect(restored(settings), "line editing, echo and signal keys are back")
    #expect(["queued", "active"].contains(try await fixture.download(second)?["state"] ?? ""))
  }

  @Test func aCancelledDownloadStaysListedAndRResumesIt() async throws {
    let server = try TestServer()
    let slow = ServedFile.serve(2, size: 3_000_000, on: server, bytesPerSecond: 20_000, seed: 91)
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "-x", "1", slow[0].url, slow[1].url])
    let terminal = try InteractiveTerminal(columns: 100, rows: 14)
    try terminal.start(["ui", "--catalog", fixture.catalog.path, "-d", "out"], in: fixture.directory.url)
    try await terminal.waitFor("2 downloads, 2 active")

    // c cancels the selected (first) row; it stays on the list, selected, as removed.
    var mark = terminal.mark
    terminal.type("c")
    try await terminal.waitFor("cancelled f0.bin (r resumes it)", after: mark)
    try await terminal.waitFor("2 downloads, 1 active", after: mark)
    #expect(try await fixture.download(ids[0])?["state"] == "removed")

    // r resumes that same download, not the row that followed it.
    mark = terminal.mark
    terminal.type("r")
    try await terminal.waitFor("resumed f0.bin", after: mark)
    #expect(["queued", "active"].contains(try await fixture.download(ids[0])?["state"] ?? ""))
    #expect(try await fixture.download(ids[1])?["state"] == "active")
    terminal.type("q")
    let (status, _) = try await terminal.wait()
    #expect(status == 0, "\(terminal.drawn.suffix(2000))")
  }

  @Test func aCancelledDownloadIsListedAtTheNextStart() async throws {
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["--paused", "http://127.0.0.1:9/never.bin"])
    let first = try InteractiveTerminal(columns: 80, rows: 24)
    try first.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await first.waitFor("never.bin")
    first.type("c")
    try await first.waitFor("cancelled never.bin")
    first.type("q")
    _ = try await first.wait()
    #expect(try await fixture.download(ids[0])?["state"] == "removed")

    let second = try InteractiveTerminal(columns: 80, rows: 24)
    try second.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await second.waitFor("1 download, 0 active")
    try await second.waitFor("never.bin")
    second.type("r")
    try await second.waitFor("resumed never.bin")
    second.type("q")
    _ = try await second.wait()
  }

  @Test func aria2ShutdownOnTheControlSocketLeavesLikeASignal() async throws {
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["--paused", "http://127.0.0.1:9/never.bin"])
    let terminal = try InteractiveTerminal(columns: 80, rows: 24)
    try terminal.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await terminal.waitFor("never.bin")
    let client = try UnixSocketClient(path: fixture.catalog.path + ".sock")
    #expect(try client.exchange(#"{"jsonrpc":"2.0","id":1,"method":"aria2.shutdown"}"#).contains(#""OK""#))
    let (status, settings) = try await terminal.wait()
    #expect(status == 130)
    #expect(terminal.drawn.hasSuffix(Self.leave))
    #expect(restored(settings))
  }

  @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
  func aSignalRestoresTheTerminal(_ number: Int32) async throws {
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["--paused", "http://127.0.0.1:9/never.bin"])
    let terminal = try InteractiveTerminal(columns: 80, rows: 24)
    try terminal.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await terminal.waitFor("never.bin")
    terminal.signal(number)
    let (status, settings) = try await terminal.wait()
    #expect(status == 130)
    #expect(terminal.drawn.hasSuffix(Self.leave))
    #expect(restored(settings))
    #expect(try await fixture.list().first?["state"] == "paused")
  }

  @Test func itServesTheOtherSubcommandsAndCtrlCLeavesLikeASignal() async throws {
    let fixture = try CatalogFixture()
    let terminal = try InteractiveTerminal(columns: 80, rows: 24)
    try terminal.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await terminal.waitFor("No downloads. Press + to add a URL.")
    // haul ui owns the catalog: haul add from another process goes through it and shows at once.
    let added = try await fixture.run("add", ["--paused", "http://127.0.0.1:9/elsewhere.bin"])
    #expect(added.status == 0, "\(added)")
    try await terminal.waitFor("elsewhere.bin")
    terminal.type("\u{03}")
    let (status, settings) = try await terminal.wait()
    #expect(status == 130)
    #expect(terminal.drawn.hasSuffix(Self.leave))
    #expect(restored(settings))
  }

  /// Ctrl-Z (a key in raw mode) and SIGTSTP from elsewhere: the terminal is put back before the
  /// process stops; SIGCONT (as fg sends it) takes it again and redraws everything.
  @Test(arguments: ["Ctrl-Z", "SIGTSTP"])
  func suspendingGivesTheTerminalBackAndContinuingRedraws(_ how: String) async throws {
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["--paused", "http://127.0.0.1:9/never.bin"])
    let terminal = try InteractiveTerminal(columns: 80, rows: 24)
    try terminal.start(["ui", "--catalog", fixture.catalog.path], in: fixture.directory.url)
    try await terminal.waitFor("never.bin")
    for round in 1...2 {
      var mark = terminal.mark
      if how == "SIGTSTP" { terminal.signal(SIGTSTP) } else { terminal.type("\u{1A}") }
      try await terminal.waitFor(Self.leave, after: mark)
      try await CatalogFixture.waitUntil("haul ui is stopped") { terminal.processState == "T" }
      #expect(terminal.drawn.hasSuffix(Self.leave), "round \(round): the alternate screen is left last")
      #expect(restored(terminal.settings), "round \(round): the shell gets a cooked terminal")

      mark = terminal.mark
      terminal.signal(SIGCONT)
      try await terminal.waitFor(Self.enter, after: mark)
      try await terminal.waitFor("never.bin", after: mark)
      let redrawn = terminal.drawn(after: mark)
      #expect(redrawn.contains("\u{1B}[2J") && redrawn.contains("1 download, 0 active"), "a full redraw")
      #expect(terminal.settings.c_lflag & tcflag_t(ICANON | ECHO) == 0, "round \(round): raw mode again")
    }
    // The keys work as before.
    let mark = terminal.mark
    terminal.type(">")
    try await terminal.waitFor("5 at a time", after: mark)
    terminal.type("q")
    let (status, settings) = try await terminal.wait()
    #expect(status == 0, "\(terminal.drawn.suffix(2000))")
    #expect(terminal.drawn.hasSuffix(Self.leave))
    #expect(restored(settings))
  }

  @Test func withoutATerminalItSaysSoAndTouchesNothing() async throws {
    let fixture = try CatalogFixture()
    let outcome = try await fixture.run("ui")
    #expect(outcome.status == 2, "\(outcome)")
    #expect(outcome.stderr.contains("haul ui needs a terminal"), "\(outcome)")
    #expect(!outcome.stdout.contains(Self.enter))
    #expect(!FileManager.default.fileExists(atPath: fixture.catalog.path), "no catalog is made")
  }
}
