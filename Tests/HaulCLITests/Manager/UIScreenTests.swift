import Foundation
import Haul
import HaulRPC
import Testing

@testable import HaulCLI

/// `haul ui`'s pure parts: bytes to keys, keys to commands, and the lines of a screen.
@Suite("haul ui screen")
struct UIScreenTests {
  static let a = DownloadID("2089b05ecca3d829")!
  static let b = DownloadID("7c1e0d9a4f3b2e61")!
  static let c = DownloadID("0000000000000abc")!
  static let rows = [
    UIState.Row(id: a, name: "ubuntu.iso"), UIState.Row(id: b, name: "debian.iso"),
    UIState.Row(id: c, name: "arch.iso"),
  ]

  @Test(arguments: [
    ("j", [UIKey.character("j")]),
    ("\u{1B}[A\u{1B}[B", [.up, .down]),
    ("\u{1B}OA", [.up]),
    ("\u{1B}[3~", [.delete]),
    ("\u{1B}[5~\u{1B}[6~", [.pageUp, .pageDown]),
    ("\u{1B}[H\u{1B}[F\u{1B}[1~\u{1B}[4~", [.home, .end, .home, .end]),
    ("\u{1B}", [.escape]),
    ("x\u{1B}", [.character("x"), .escape]),
    ("\u{1B}[1;5C", [.other]),
    ("\r\u{7F}\u{03}\t", [.enter, .backspace, .interrupt, .tab]),
    ("\u{1A}", [.suspend]),
    ("é+", [.character("é"), .character("+")]),
  ])
  func bytesBecomeKeys(_ bytes: String, _ keys: [UIKey]) {
    var decoder = UIKeyDecoder()
    #expect(decoder.feed(Array(bytes.utf8)) == keys)
  }

  @Test func sequencesSplitAcrossReadsWaitForTheirEnd() {
    var decoder = UIKeyDecoder()
    #expect(decoder.feed(Array("\u{1B}[".utf8)) == [])
    #expect(decoder.feed(Array("A".utf8)) == [.up])
    let e = Array("é".utf8)
    #expect(decoder.feed([e[0]]) == [])
    #expect(decoder.feed([e[1]]) == [.character("é")])
  }

  @Test(arguments: [
    ([UIKey.character("p")], [UIState.Command.pause(a)]),
    ([.character("j"), .character("r")], [.resume(b)]),
    ([.down, .down, .down, .character("c")], [.cancel(c)]),
    ([.end, .up, .character("p")], [.pause(b)]),
    ([.character("G"), .character("g"), .character("p")], [.pause(a)]),
    ([.character("d"), .character("y")], [.remove(a)]),
    ([.delete, .character("n")], []),
    ([.character("j"), .delete, .character("Y")], [.remove(b)]),
    (
      [.character("+"), .character("h"), .character("x"), .backspace, .character("i"), .enter],
      [.add(url: "hi")]
    ),
    ([.character("+"), .character("q"), .escape, .character("p")], [.pause(a)]),
    ([.character("+"), .character(" "), .enter], []),
    ([.character("<"), .character(">")], [.changeConcurrency(by: -1), .changeConcurrency(by: 1)]),
    ([.character("q")], [.quit(interrupted: false)]),
    ([.character("+"), .interrupt], [.quit(interrupted: true)]),
    ([.character("z"), .tab, .other], []),
    // Ctrl-Z suspends in any mode; what was being typed stays.
    ([.suspend], [.suspend]),
    ([.character("+"), .character("h"), .suspend, .character("i"), .enter], [.suspend, .add(url: "hi")]),
    ([.character("d"), .suspend, .character("y")], [.suspend, .remove(a)]),
    // Rate limits: the selected download's (l) and all together (L), as --limit-rate spells them.
    (
      [.character("l"), .character("5"), .character("0"), .character("0"), .character("K"), .enter],
      [.limitRate(a, 512_000)]
    ),
    ([.character("j"), .character("l"), .character("0"), .enter], [.limitRate(b, nil)]),
    ([.character("L"), .character("2"), .character("M"), .enter], [.limitOverallRate(2 << 20)]),
    (
      [.character("L"), .character("n"), .character("o"), .character("n"), .character("e"), .enter],
      [.limitOverallRate(nil)]
    ),
    ([.character("l"), .character("x"), .enter, .character("p")], [.pause(a)]),
    ([.character("l"), .character("-"), .character("1"), .enter], []),
    ([.character("L"), .character("9"), .escape, .character("p")], [.pause(a)]),
    ([.character("l"), .enter], []),
  ])
  func keysBecomeCommands(_ keys: [UIKey], _ commands: [UIState.Command]) {
    var state = UIState()
    var issued: [UIState.Command] = []
    for key in keys { issued += state.handle(key, rows: Self.rows, visibleRows: 10) }
    #expect(issued == commands)
  }

  @Test func theSelectionFollowsItsDownloadAndStaysInView() {
    var state = UIState()
    _ = state.handle(.character("j"), rows: Self.rows, visibleRows: 2)
    #expect(state.selected == Self.b)
    // Reordered: still b.
    let reordered = [Self.rows[1], Self.rows[2], Self.rows[0]]
    state.fit(rows: reordered, visibleRows: 2)
    #expect(state.selectedIndex(in: reordered) == 0)
    _ = state.handle(.end, rows: reordered, visibleRows: 2)
    #expect(state.selected == Self.a && state.top == 1)
    // Its download gone: the row now at its place (here the last).
    state.fit(rows: Array(reordered.prefix(2)), visibleRows: 2)
    #expect(state.selected == Self.c && state.top == 0)
    // The one before it gone: it stays itself.
    state.fit(rows: [Self.rows[2]], visibleRows: 2)
    #expect(state.selected == Self.c)
    state.fit(rows: [], visibleRows: 2)
    #expect(state.selected == nil)
    var empty = UIState()
    #expect(empty.handle(.character("p"), rows: [], visibleRows: 5) == [])
    #expect(empty.message == "no download selected: + adds one")
    #expect(empty.handle(.character("l"), rows: [], visibleRows: 5) == [])
    #expect(empty.mode == .browsing)
  }

  static let items = [
    UIScreen.Item(
      id: a, name: "ubuntu.iso", state: .active, bytes: 1 << 30, totalBytes: 4 << 30,
      bytesPerSecond: Double(4 << 20)),
    UIScreen.Item(id: b, name: "debian.iso", state: .paused, bytes: 0, totalBytes: nil, bytesPerSecond: 0),
    UIScreen.Item(
      id: c, name: "arch.iso", state: .failed, bytes: 10, totalBytes: 100, bytesPerSecond: 0,
      problem: "the server answered 404 Not Found"),
  ]
  static let summary = UIScreen.Summary(
    catalog: "/c.sqlite", active: 1, bytesPerSecond: Double(4 << 20), maxConcurrent: 4)

  /// Lines without their colours.
  private func plain(_ lines: [String]) -> [String] {
    lines.map { line in
      [UIScreen.reverse, UIScreen.bold, UIScreen.plain].reduce(line) {
        $0.replacingOccurrences(of: $1, with: "")
      }
    }
  }

  @Test func aScreenAtEightyColumns() {
    let screen = UIScreen(size: TerminalSize(columns: 80, rows: 8))
    var state = UIState()
    state.fit(rows: Self.items.map { $0.row }, visibleRows: screen.visibleRows)
    let lines = screen.lines(items: Self.items, state: state, summary: Self.summary)
    let expected = [
      "haul ui  /c.sqlite               3 downloads, 1 active, 4.00 MiB/s, 4 at a time",
      "  NAME                   PROGRESS                       SPEED     ETA  STATE   ",
      "> ubuntu.iso             ━━━━───────────────  25%  4.00 MiB/s  12m48s  active  ",
      "  debian.iso             ···················    -           -       -  paused  ",
      "  arch.iso               ━──────────────────  10%           -       -  failed  ",
      "",
      "",
      "↑↓ move  p pause  r resume  c cancel  d rm  + add  </> jobs  l/L limit  q quit",
    ]
    #expect(plain(lines) == expected)
    #expect(lines[2].hasPrefix(UIScreen.reverse), "the selected row is highlighted")
    #expect(plain(lines).allSatisfy { $0.count <= 79 }, "the last column stays free")
  }

  @Test func narrowScreensDropTheBarThenTheETAThenTheSpeed() {
    func row(_ columns: Int) -> String {
      plain(
        UIScreen(size: TerminalSize(columns: columns, rows: 6)).lines(
          items: Self.items, state: UIState(), summary: Self.summary))[2]
    }
    #expect(row(60) == "> ubuntu.iso              25%  4.00 MiB/s  12m48s  active  ")
    #expect(row(48) == "> ubuntu.iso          25%  4.00 MiB/s  active  ")
    #expect(row(36) == "> ubuntu.iso          25%  active  ")
    #expect(row(26) == "> ubu…iso   25%  active  ")
    #expect(
      UIScreen(size: TerminalSize(columns: 19, rows: 6)).lines(
        items: Self.items, state: UIState(), summary: Self.summary) == ["terminal too small"])
  }

  @Test func theMessageLineShowsPromptsConfirmationsAndProblems() {
    let screen = UIScreen(size: TerminalSize(columns: 70, rows: 7))
    func message(_ keys: [UIKey]) -> String {
      var state = UIState()
      for key in keys {
        _ = state.handle(key, rows: Self.items.map { $0.row }, visibleRows: screen.visibleRows)
      }
      return plain(screen.lines(items: Self.items, state: state, summary: Self.summary))[5]
    }
    #expect(message([]) == "")
    #expect(message([.end]) == "arch.iso: the server answered 404 Not Found")
    #expect(message([.character("+"), .character("h")]) == "Add URL (Enter adds, Esc cancels): h_")
    #expect(message([.character("d")]) == "Remove ubuntu.iso? Its files stay. y: remove, other keys: keep")
    #expect(message([.character("d"), .character("x")]) == "nothing removed")
    #expect(
      message([.character("l"), .character("2")])
        == "Rate limit of ubuntu.iso (now none; 500K, 2M, 0 lifts it): 2_")
    #expect(
      message([.character("l"), .character("x"), .enter])
        == "'x' is not a rate (500K, 2M; 0 lifts the limit): no limit changed")
    #expect(message([.character("L"), .escape]) == "no limit changed")
  }

  @Test func limitsShowInTheTitleThePromptAndTheSelectedRow() {
    let screen = UIScreen(size: TerminalSize(columns: 100, rows: 7))
    var items = Self.items
    items[1].rateLimit = 512_000
    var summary = Self.summary
    summary.overallRateLimit = 2 << 20
    func lines(_ keys: [UIKey]) -> [String] {
      var state = UIState()
      for key in keys { _ = state.handle(key, rows: items.map { $0.row }, visibleRows: screen.visibleRows) }
      return plain(screen.lines(items: items, state: state, summary: summary))
    }
    #expect(lines([])[0].hasSuffix("3 downloads, 1 active, 4.00 MiB/s, 4 at a time, limit 2.00 MiB/s"))
    #expect(lines([.down])[5] == "debian.iso: limited to 500 KiB/s (l changes it)")
    #expect(
      lines([.down, .character("l")])[5]
        == "Rate limit of debian.iso (now 500 KiB/s; 500K, 2M, 0 lifts it): _")
    #expect(
      lines([.character("L")])[5]
        == "Rate limit of all downloads together (now 2.00 MiB/s; 500K, 2M, 0 lifts it): _")
    // A failed download's reason comes before its limit.
    items[2].rateLimit = 1000
    #expect(lines([.end])[5] == "arch.iso: the server answered 404 Not Found")
  }

  @Test func attachedToAnOwnerTheTitleNamesItAndANoticeComesFirst() {
    let screen = UIScreen(size: TerminalSize(columns: 100, rows: 7))
    var summary = Self.summary
    summary.owner = 4242
    var state = UIState()
    _ = state.handle(.character("+"), rows: Self.items.map { $0.row }, visibleRows: screen.visibleRows)
    _ = state.handle(.escape, rows: Self.items.map { $0.row }, visibleRows: screen.visibleRows)
    var lines = plain(screen.lines(items: Self.items, state: state, summary: summary))
    #expect(lines[0].hasPrefix("haul ui  /c.sqlite  (owned by process 4242)  "), "\(lines[0])")
    #expect(lines[0].hasSuffix("3 downloads, 1 active, 4.00 MiB/s, 4 at a time"))
    #expect(lines[5] == "nothing added")
    summary.notice = "waiting for process 4242, which owns the catalog, to answer"
    lines = plain(screen.lines(items: Self.items, state: state, summary: summary))
    #expect(lines[5] == "waiting for process 4242, which owns the catalog, to answer")
  }

  @Test func anOwnersSnapshotTravelsAsJSONAndBecomesRows() throws {
    let snapshot = ControlSnapshot(
      downloads: [
        .init(
          id: Self.a, url: "https://example.org/dir/ubuntu.iso", file: "/home/me/ubuntu.iso", state: .active,
          bytes: 1 << 30, totalBytes: 4 << 30, bytesPerSecond: 1.5e6, connections: 2, rateLimit: 250_000,
          queueIndex: nil, error: nil, needsCredentials: false),
        .init(
          id: Self.b, url: "https://example.org/debian.iso", file: nil, state: .paused, bytes: 0,
          totalBytes: nil, bytesPerSecond: 0, connections: 0, queueIndex: 0, error: nil,
          needsCredentials: true, fallbackFileName: "debian.1.iso"),
        .init(
          id: Self.c, url: "https://example.org/arch.iso", file: nil, state: .failed, bytes: 10,
          totalBytes: 100, bytesPerSecond: 0, connections: 0, queueIndex: nil,
          error: HaulError(.server, "the server answered 404 Not Found", hint: "check the URL"),
          needsCredentials: false),
      ], active: 1, waiting: 1, stopped: 1, bytesPerSecond: 1.5e6, maxConcurrent: 3, overallRateLimit: 65536)
    let text = snapshot.json.serialized
    let decoded = try ControlSnapshot(json: try JSONValue.parse(text))
    #expect(decoded == snapshot)
    let items = decoded.downloads.map(UIScreen.Item.init)
    // An unnamed download is shown by the name `--auto-rename` gave it, before the URL's.
    #expect(items.map(\.name) == ["ubuntu.iso", "debian.1.iso", "arch.iso"])
    #expect(items[0].bytesPerSecond == 1.5e6 && items[0].totalBytes == 4 << 30)
    #expect(items[0].rateLimit == 250_000 && items[1].rateLimit == nil)
    #expect(items[1].problem == "it needs its credentials again (haul add it anew)")
    #expect(items[2].problem == "the server answered 404 Not Found")
    #expect(throws: HaulError.self) { try ControlSnapshot(json: ["downloads": []]) }
  }

  @Test func onlyChangedLinesAreRewritten() {
    #expect(UIScreen.update(from: nil, to: ["a", "b"]) == "\u{1B}[H\u{1B}[2J\u{1B}[1;1Ha\u{1B}[2;1Hb")
    #expect(UIScreen.update(from: ["a", "b"], to: ["a", "b"]) == "")
    #expect(UIScreen.update(from: ["a", "b"], to: ["a", "c"]) == "\u{1B}[2;1Hc\u{1B}[0m\u{1B}[K")
    #expect(
      UIScreen.update(from: ["a"], to: ["a", "b"]).hasPrefix("\u{1B}[H\u{1B}[2J"), "a new size: all of it")
  }
}
