import Foundation
import HaulTestSupport
import Testing

/// What `haul` draws on a terminal (a pseudo-terminal of a known size), reduced to lines.
@Suite("terminal display")
struct TerminalDisplayTests {
  /// Lines drawn in place (they end with "clear to end of line"), as the terminal showed them.
  private func frameLines(_ screen: ScreenModel) -> [String] { screen.history.filter { !$0.isEmpty } }

  @Test func severalURLsGetALineEachAboveTheBatchLine() async throws {
    let server = try TestServer()
    let bodies = (1...3).map { TestResource.random(size: 600_000, seed: 150 + UInt64($0)) }
    for (index, body) in bodies.enumerated() {
      server.setResource(
        "/f\(index + 1).bin",
        TestResource(body: body, etag: "\"\(index)\"", faults: TestFaults(bytesPerSecond: 300_000)))
    }
    let directory = try TemporaryDirectory()
    let terminal = try PseudoTerminal(columns: 100, rows: 5)
    let urls = ["http://127.0.0.1:1/gone.bin"] + (1...3).map { server.url("/f\($0).bin") }
    let (status, drawn) = try await terminal.run(
      ["-j", "4", "-x", "1", "--retries", "1", "-d", "out"] + urls, in: directory.url)
    #expect(status == 4, "\(drawn)")
    let screen = ScreenModel(drawn)
    let frames = frameLines(screen)
    // Five rows: two downloads, the count of the rest, the batch's line, and a row for messages.
    #expect(
      frames.contains { $0.hasPrefix("gone.bin  retrying in ") && $0.hasSuffix(", attempt 2 of 2") },
      "\(frames)")
    #expect(
      frames.contains { $0.hasPrefix("f1.bin    ") && $0.contains("% ━") && $0.contains("ETA") }, "\(frames)")
    #expect(frames.contains("… and 2 more running"), "\(frames)")
    #expect(frames.contains { $0.hasPrefix("[0/4] 4 running · ") }, "\(frames)")
    #expect(drawn.contains("\u{1B}[3A"), "the block is redrawn in place")
    // Messages may wrap; the lines redrawn in place never do.
    let drawnInPlace = frames.filter { !$0.hasPrefix("haul: ") && !$0.hasPrefix("✓ ") }
    #expect(drawnInPlace.allSatisfy { $0.count <= 99 }, "\(drawnInPlace.filter { $0.count > 99 })")
    // At the end only messages remain: a line per file and the closing count, no block.
    let shown = screen.lines.filter { !$0.isEmpty }
    #expect(shown.filter { $0.hasPrefix("✓ saved out/f") }.count == 3, "\(shown)")
    #expect(shown.last == "haul: 4 URLs: 3 done, 1 failed", "\(shown)")
    #expect(
      !shown.contains { $0.contains("running") || $0.contains("retrying in") && !$0.hasPrefix("haul:") })
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("out/f\(index + 1).bin"), body)
      #expect(same, "f\(index + 1).bin differs")
    }
  }

  @Test func waitingToRetryReplacesTheSpeedAndETA() async throws {
    let directory = try TemporaryDirectory()
    let terminal = try PseudoTerminal(columns: 120, rows: 20)
    let (status, drawn) = try await terminal.run(
      ["--retries", "1", "http://127.0.0.1:1/gone.bin"], in: directory.url)
    #expect(status == 4, "\(drawn)")
    let screen = ScreenModel(drawn)
    #expect(
      frameLines(screen).contains {
        $0.hasPrefix("gone.bin  retrying in ") && $0.contains(": cannot connect")
          && $0.hasSuffix(", attempt 2 of 2")
      },
      "\(screen.history)")
    #expect(screen.lines.filter { !$0.isEmpty }.allSatisfy { $0.hasPrefix("haul: ") }, "\(screen.lines)")
  }
}
