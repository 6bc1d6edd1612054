import Foundation
import Haul
import Synchronization
import Testing

@testable import HaulCLI

@Suite("Reporter")
struct ReporterTests {
  /// A clock the test moves by hand.
  final class FakeClock: Sendable {
    private let seconds = Mutex(0.0)
    var now: Double { seconds.withLock { $0 } }
    func advance(_ by: Double) { seconds.withLock { $0 += by } }
  }

  let mib: Int64 = 1 << 20

  private func reporter(
    _ style: Reporter.Style, _ capture: OutputCapture, _ clock: FakeClock, saved: SavedProgress? = nil
  ) -> Reporter {
    Reporter(
      style: style, sink: capture.sink, now: { clock.now }, width: { 60 },
      displayPath: { $0.lastPathComponent },
      savedProgress: { _ in saved })
  }

  @Test func terminalRedrawsInPlaceAndThrottles() {
    let capture = OutputCapture()
    let clock = FakeClock()
    var reporter = reporter(.terminal, capture, clock)
    reporter.handle(.started(Fixtures.start(total: 100 * mib)))
    #expect(capture.stderr == "haul: downloading ubuntu.iso (100 MiB)\n")
    reporter.handle(.progress(Fixtures.progress(1 * mib, of: 100 * mib, speed: 1e6)))
    reporter.handle(.progress(Fixtures.progress(2 * mib, of: 100 * mib, speed: 1e6)))  // Too soon: skipped.
    clock.advance(0.1)
    reporter.handle(.progress(Fixtures.progress(3 * mib, of: 100 * mib, speed: 1e6)))
    let redraws = capture.stderr.components(separatedBy: "\r").dropFirst()
    #expect(redraws.count == 2)
    #expect(redraws.allSatisfy { $0.hasSuffix("\u{1B}[K") && $0.hasPrefix("ubuntu.iso") })
    #expect(!capture.stderr.contains("2.00 MiB /"))
    #expect(capture.stdout.isEmpty)
  }

  @Test func retryMessageGoesAboveTheLine() {
    let capture = OutputCapture()
    let clock = FakeClock()
    var reporter = reporter(.terminal, capture, clock)
    reporter.handle(.started(Fixtures.start(total: 100)))
    reporter.handle(.progress(Fixtures.progress(10, of: 100)))
    let before = capture.stderr.count
    reporter.handle(
      .retrying(
        Fixtures.retry(attempt: 3, max: 10, delay: 2, reason: HaulError(.network, "connection reset"))))
    let after = String(capture.stderr.dropFirst(before))
    // The message goes above; the line says what it waits for instead of the last speed and ETA.
    #expect(
      after
        == "\r\u{1B}[Khaul: connection reset; retrying in 2.0 s (attempt 4 of 10)\n"
        + "\rubuntu.iso  retrying in 2 s: connection r…, attempt 4 of 10\u{1B}[K")
  }

  @Test func theWaitCountsDownAndTheProgressComesBackAfterIt() {
    let capture = OutputCapture()
    let clock = FakeClock()
    var reporter = reporter(.terminal, capture, clock)
    reporter.handle(.started(Fixtures.start(total: 100 * mib)))
    reporter.handle(.progress(Fixtures.progress(10 * mib, of: 100 * mib, speed: 1e6)))
    reporter.handle(
      .retrying(Fixtures.retry(attempt: 1, max: 5, delay: 3.5, reason: HaulError(.network, "reset"))))
    var frames: [String] = []
    for _ in 0..<4 {
      clock.advance(1)
      let before = capture.stderr.count
      reporter.tick()
      frames.append(String(capture.stderr.dropFirst(before)))
    }
    #expect(
      frames == [
        "\rubuntu.iso  retrying in 3 s: reset, attempt 2 of 5\u{1B}[K",
        "\rubuntu.iso  retrying in 2 s: reset, attempt 2 of 5\u{1B}[K",
        "\rubuntu.iso  retrying in 1 s: reset, attempt 2 of 5\u{1B}[K",
        "\rubuntu.iso  retrying now: reset, attempt 2 of 5\u{1B}[K",
      ])
    reporter.handle(.progress(Fixtures.progress(11 * mib, of: 100 * mib, speed: 1e6)))
    #expect(capture.stderr.hasSuffix("11.0 MiB / 100 MiB  977 KiB/s  ETA 1m34s\u{1B}[K"), "\(capture.stderr)")
    let before = capture.stderr.count
    reporter.tick()  // Nothing to count down any more.
    #expect(capture.stderr.count == before)
    // Unlimited retries (--retries inf) say no "of".
    let unlimited = Fixtures.retry(attempt: 7, max: Int.max, delay: 60, reason: HaulError(.network, "reset"))
    #expect(Reporter.retryText(unlimited) == "reset; retrying in 60.0 s (attempt 8)")
  }

  @Test func aWaitBeforeTheStartIsNamedByTheExpectedFile() {
    let capture = OutputCapture()
    var reporter = Reporter(
      style: .terminal, sink: capture.sink, now: { 0 }, width: { 80 }, savedProgress: { _ in nil },
      label: "x.iso")
    reporter.handle(
      .retrying(Fixtures.retry(attempt: 1, max: 3, delay: 1, reason: HaulError(.network, "refused"))))
    #expect(capture.stderr.hasSuffix("\rx.iso  retrying in 1 s: refused, attempt 2 of 3\u{1B}[K"))
  }

  @Test func nothingAfterTheEnd() {
    for style in [Reporter.Style.terminal, .plain, .json] {
      let capture = OutputCapture()
      let clock = FakeClock()
      var reporter = reporter(style, capture, clock)
      reporter.handle(.failed(HaulError(.protocol, "too many redirects")))
      let before = (capture.stderr, capture.stdout)
      clock.advance(6)
      reporter.handle(.progress(Fixtures.progress(0, of: nil)))
      reporter.tick()
      #expect(capture.stderr == before.0 && capture.stdout == before.1, "\(style)")
      #expect(!capture.stderr.contains(" 0 B/s"))
    }
  }

  @Test func plainLinesNeedAStartedDownloadAndShowAMeasuredSpeed() {
    let capture = OutputCapture()
    let clock = FakeClock()
    var reporter = reporter(.plain, capture, clock)
    // A progress tick while connecting (the file is known from -o): no line without a name.
    clock.advance(6)
    reporter.handle(.progress(Fixtures.progress(0, of: nil)))
    #expect(capture.stderr.isEmpty)
    reporter.handle(.started(Fixtures.start(resumedFrom: 100 * mib, total: 1000 * mib)))
    clock.advance(0.5)
    // The library's first tick has no rate yet (one sample): the display measures one.
    reporter.handle(.progress(Fixtures.progress(200 * mib, of: 1000 * mib, speed: 0)))
    #expect(
      capture.stderr.hasSuffix("haul: ubuntu.iso 20%, 200 MiB of 0.98 GiB, 200 MiB/s, ETA 4s\n"),
      "\(capture.stderr)")
    clock.advance(1)
    reporter.handle(.progress(Fixtures.progress(300 * mib, of: 1000 * mib, speed: 100 * 1_048_576)))
    #expect(capture.stderr.hasSuffix("haul: ubuntu.iso 30%, 300 MiB of 0.98 GiB, 100 MiB/s, ETA 7s\n"))
    // Once the library measures, its 0 means a stall.
    clock.advance(1)
    reporter.handle(.progress(Fixtures.progress(400 * mib, of: 1000 * mib, speed: 0)))
    #expect(capture.stderr.hasSuffix("haul: ubuntu.iso 40%, 400 MiB of 0.98 GiB, 0 B/s\n"))
  }

  @Test func completionReplacesTheLine() {
    let capture = OutputCapture()
    let clock = FakeClock()
    var reporter = reporter(.terminal, capture, clock)
    reporter.handle(.started(Fixtures.start(total: 1 << 30)))
    reporter.handle(.progress(Fixtures.progress(1 << 30, of: 1 << 30)))
    reporter.handle(.completed(Fixtures.result(duration: 12.3)))
    #expect(capture.stderr.hasSuffix("\r\u{1B}[K✓ saved ubuntu.iso (1.00 GiB in 12.3 s, 83.3 MiB/s)\n"))
  }

  @Test func summaries() {
    #expect(
      Reporter.summary(Fixtures.result(alreadyComplete: true), path: "a.iso") == "✓ a.iso is already complete"
    )
    #expect(
      Reporter.summary(Fixtures.result(alreadyComplete: true, remoteChanged: true), path: "a.iso")
        == "! a.iso is complete, but the server's copy has changed since; --overwrite fetches the new one")
    #expect(
      Reporter.summary(
        Fixtures.result(total: 100 * mib, received: 60 * mib, resumedFrom: 40 * mib, duration: 2), path: "a")
        == "✓ saved a (100 MiB in 2.00 s, 30.0 MiB/s; resumed from 40.0 MiB)")
    #expect(
      Reporter.summary(Fixtures.result(total: 0, received: 0, duration: 0), path: "e")
        == "✓ saved e (0 B in 0.00 s)")
    // `-o -`: no file to name.
    #expect(
      Reporter.summary(Fixtures.result(total: 100 * mib, received: 100 * mib, duration: 2), path: nil)
        == "✓ sent to standard output (100 MiB in 2.00 s, 50.0 MiB/s)")
  }

  @Test func startTexts() {
    #expect(Reporter.startText(Fixtures.start(total: nil), path: "x") == "downloading x (size unknown)")
    #expect(
      Reporter.startText(Fixtures.start(resumedFrom: 41 * mib, total: 100 * mib), path: "x")
        == "resuming x at 41.0 MiB of 100 MiB")
    #expect(
      Reporter.startText(Fixtures.start(total: 100 * mib), path: nil)
        == "downloading to standard output (100 MiB)")
    #expect(
      Reporter.shownPath(URL(fileURLWithPath: DownloadDestination.standardOutputPath), Reporter.relativePath)
        == nil)
    #expect(Reporter.shownPath(URL(fileURLWithPath: "/tmp/a.iso"), Reporter.relativePath) == "/tmp/a.iso")
  }

  @Test func restartMessage() {
    let capture = OutputCapture()
    var reporter = reporter(.plain, capture, FakeClock())
    reporter.handle(.restarted(reason: "the server's copy changed"))
    #expect(capture.stderr == "haul: the server's copy changed; starting over\n")
  }

  @Test func errors() {
    #expect(Reporter.errorText(HaulError(.server, "404 Not Found")) == "haul: 404 Not Found\n")
    #expect(
      Reporter.errorText(HaulError(.network, "refused", hint: "is the server up?"))
        == "haul: refused\nhaul: is the server up?\n")
    let interrupted = HaulError(
      .interrupted, "stopped; 41.2 MiB saved", hint: "run the same command again to resume")
    #expect(
      Reporter.errorText(interrupted, held: (41 * mib, 100 * mib))
        == "haul: stopped at 41.0 MiB of 100 MiB; run the same command again to resume\n")
    #expect(
      Reporter.errorText(interrupted)
        == "haul: stopped; 41.2 MiB saved\nhaul: run the same command again to resume\n")
  }

  @Test func interruptUsesWhatIsOnDisk() {
    let capture = OutputCapture()
    let saved = Fixtures.saved(bytes: 50 * mib, total: 100 * mib)
    var reporter = reporter(.terminal, capture, FakeClock(), saved: saved)
    reporter.handle(.started(Fixtures.start(total: 100 * mib)))
    reporter.handle(.progress(Fixtures.progress(10 * mib, of: 100 * mib)))
    reporter.handle(
      .failed(
        HaulError(.interrupted, "stopped; 50.0 MiB saved", hint: "run the same command again to resume")))
    #expect(
      capture.stderr.hasSuffix(
        "\r\u{1B}[Khaul: stopped at 50.0 MiB of 100 MiB; run the same command again to resume\n"))
  }

  @Test func plainPrintsEveryTenPercentOrFiveSeconds() {
    let capture = OutputCapture()
    let clock = FakeClock()
    var reporter = reporter(.plain, capture, clock)
    reporter.handle(.started(Fixtures.start(total: 1000)))
    for bytes in stride(from: Int64(10), through: 1000, by: 10) {
      clock.advance(0.01)
      reporter.handle(.progress(Fixtures.progress(bytes, of: 1000, speed: 1000)))
    }
    let lines = capture.stderr.split(separator: "\n")
    #expect(!capture.stderr.contains("\r") && !capture.stderr.contains("\u{1B}"))
    #expect(lines.count == 1 + 9)  // The start, then 10%…90%; the summary stands for 100%.
    #expect(lines[1] == "haul: ubuntu.iso 10%, 100 B of 0.98 KiB, 0.98 KiB/s, ETA 1s")

    let slow = OutputCapture()
    var unknown = self.reporter(.plain, slow, clock)
    unknown.handle(.started(Fixtures.start(total: nil)))
    unknown.handle(.progress(Fixtures.progress(1, of: nil)))
    clock.advance(5)
    unknown.handle(.progress(Fixtures.progress(2, of: nil)))
    clock.advance(1)
    unknown.handle(.progress(Fixtures.progress(3, of: nil)))
    #expect(slow.stderr == "haul: downloading ubuntu.iso (size unknown)\nhaul: ubuntu.iso 2 B, 0 B/s\n")
  }

  @Test func quietShowsOnlyErrors() {
    let capture = OutputCapture()
    var reporter = reporter(.quiet, capture, FakeClock())
    reporter.handle(.started(Fixtures.start()))
    reporter.handle(.progress(Fixtures.progress(1, of: 2)))
    reporter.handle(.retrying(Fixtures.retry(reason: HaulError(.network, "reset"))))
    reporter.handle(.restarted(reason: "changed"))
    reporter.handle(.completed(Fixtures.result()))
    #expect(capture.stderr.isEmpty && capture.stdout.isEmpty)
    let failing = OutputCapture()
    var other = self.reporter(.quiet, failing, FakeClock())
    other.handle(.started(Fixtures.start()))
    other.handle(.failed(HaulError(.tls, "certificate expired")))
    #expect(failing.stderr == "haul: certificate expired\n")
  }

  @Test func jsonWritesOnlyJSONToStdout() throws {
    let capture = OutputCapture()
    var reporter = reporter(.json, capture, FakeClock())
    reporter.handle(.started(Fixtures.start()))
    reporter.handle(.progress(Fixtures.progress(1, of: 2)))
    reporter.handle(.retrying(Fixtures.retry(reason: HaulError(.network, "reset"))))
    reporter.handle(.failed(HaulError(.server, "gone", hint: "check")))
    let lines = capture.stdout.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 5 && lines.last == "")
    for line in lines.dropLast() {
      #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
    }
    #expect(capture.stderr == "haul: gone\nhaul: check\n")
  }
}
