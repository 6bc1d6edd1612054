import Foundation
import Haul
import Testing

@testable import HaulCLI

/// The batch display on a terminal: a line per running download above the batch's line.
@Suite("Batch reporter")
struct BatchReporterTests {
  let mib: Int64 = 1 << 20

  private func reporter(
    _ capture: OutputCapture, _ clock: ReporterTests.FakeClock, urls: Int, width: Int = 80, height: Int = 24,
    style: Reporter.Style = .terminal
  ) -> BatchReporter {
    BatchReporter(
      style: style, sink: capture.sink, urls: (0..<urls).map { "http://h/f\($0).iso" }, now: { clock.now },
      width: { width }, height: { height }, labels: (0..<urls).map { "f\($0).iso" })
  }

  private func start(_ reporter: inout BatchReporter, _ index: Int, name: String? = nil) {
    reporter.handle(
      index, .started(Fixtures.start(file: "/dl/" + (name ?? "f\(index).iso"), total: 100 * mib)))
  }

  @Test func aLinePerRunningDownloadAboveTheBatchLine() {
    let capture = OutputCapture()
    let clock = ReporterTests.FakeClock()
    var reporter = reporter(capture, clock, urls: 3)
    start(&reporter, 0, name: "debian-12.iso")
    start(&reporter, 1)
    reporter.handle(0, .progress(Fixtures.progress(50 * mib, of: 100 * mib, speed: 2e6)))
    reporter.handle(
      2,
      .retrying(
        Fixtures.retry(attempt: 1, max: 10, delay: 4, reason: HaulError(.network, "connection reset"))))
    let lines = reporter.blockLines(at: clock.now)
    #expect(lines.count == 3)
    #expect(
      lines[0].hasPrefix("debian-12.iso   50% ━")
        && lines[0].hasSuffix("50.0 MiB / 100 MiB  1.91 MiB/s  ETA 27s"))
    #expect(lines[1] == "f2.iso         retrying in 4 s: connection reset, attempt 2 of 10")
    #expect(lines[2] == "[0/3] 3 running · 1.91 MiB/s")
    #expect(lines.allSatisfy { $0.count <= 79 })
    // f1.iso has started but has no progress yet: counted, not drawn.
    #expect(!lines.joined().contains("f1.iso"))
  }

  @Test func moreDownloadsThanTheTerminalHoldsAreCounted() {
    let capture = OutputCapture()
    let clock = ReporterTests.FakeClock()
    var reporter = reporter(capture, clock, urls: 10, width: 50, height: 6)
    for index in 0..<8 {
      start(&reporter, index)
      reporter.handle(index, .progress(Fixtures.progress(mib, of: 100 * mib, speed: 1e6)))
    }
    let lines = reporter.blockLines(at: clock.now)
    // 6 rows: 3 downloads, the count of the others, the batch's line, one row left for messages.
    #expect(lines.count == 5)
    #expect(lines[0].hasPrefix("f0.iso") && lines[2].hasPrefix("f2.iso"))
    #expect(lines[3] == "… and 5 more running")
    #expect(lines[4].hasPrefix("[0/10] 8 running · 7.63 MiB/s"))
    #expect(lines.allSatisfy { $0.count <= 49 })
  }

  @Test func theBlockIsRedrawnInPlaceInOneWrite() {
    let capture = OutputCapture()
    let clock = ReporterTests.FakeClock()
    var reporter = reporter(capture, clock, urls: 2)
    start(&reporter, 0)
    start(&reporter, 1)
    reporter.handle(0, .progress(Fixtures.progress(mib, of: 100 * mib, speed: 1e6)))
    clock.advance(0.2)
    reporter.handle(1, .progress(Fixtures.progress(mib, of: 100 * mib, speed: 1e6)))
    clock.advance(0.2)
    let before = capture.stderr.count
    reporter.handle(0, .progress(Fixtures.progress(2 * mib, of: 100 * mib, speed: 1e6)))
    let frame = String(capture.stderr.dropFirst(before))
    // Up to the first of three lines, then each line ends by clearing the rest of it.
    #expect(frame.hasPrefix("\u{1B}[2A\rf0.iso    2% "), "\(frame.debugDescription)")
    #expect(frame.components(separatedBy: "\u{1B}[K\n").count == 3 && frame.hasSuffix("\u{1B}[K"))
    #expect(!frame.contains("\u{1B}[J"), "nothing to clear below when no line went away")

    // A file completes: its line leaves, the message goes above, the block follows, all in one write.
    let writes = capture.writes
    reporter.handle(0, .completed(Fixtures.result(file: "/dl/f0.iso", duration: 2)))
    #expect(capture.writes == writes + 1)
    let last = String(capture.stderr.dropFirst(before + frame.count))
    #expect(
      last.hasPrefix("\u{1B}[2A\r\u{1B}[J✓ saved /dl/f0.iso (1.00 GiB in 2.00 s, 512 MiB/s)\n\rf1.iso "))
    #expect(last.hasSuffix("[1/2] 1 running · 977 KiB/s\u{1B}[K"))
    reporter.finish(statuses: [0, 0], interrupted: false)
    #expect(capture.stderr.hasSuffix("\u{1B}[1A\r\u{1B}[Jhaul: 2 URLs: 2 done\n"))
  }

  @Test func countdownsMoveWithTheClock() {
    let capture = OutputCapture()
    let clock = ReporterTests.FakeClock()
    var reporter = reporter(capture, clock, urls: 1)
    reporter.handle(
      0, .retrying(Fixtures.retry(attempt: 2, max: 3, delay: 2, reason: HaulError(.network, "refused"))))
    #expect(reporter.blockLines(at: clock.now).first == "f0.iso  retrying in 2 s: refused, attempt 3 of 3")
    clock.advance(1.5)
    reporter.tick()
    #expect(
      capture.stderr.hasSuffix(
        "\rf0.iso  retrying in 1 s: refused, attempt 3 of 3\u{1B}[K\n[0/1] 1 running · 0 B/s\u{1B}[K"))
  }

  @Test func plainAndQuietDrawNoBlock() {
    for style in [Reporter.Style.plain, .quiet] {
      let capture = OutputCapture()
      let clock = ReporterTests.FakeClock()
      var reporter = reporter(capture, clock, urls: 2, style: style)
      start(&reporter, 0)
      reporter.handle(0, .progress(Fixtures.progress(mib, of: 100 * mib, speed: 1e6)))
      reporter.tick()
      #expect(!capture.stderr.contains("\u{1B}") && !capture.stderr.contains("\r"))
    }
  }
}
