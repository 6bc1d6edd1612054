import Haul
import Testing

@testable import HaulCLI

@Suite("Progress line")
struct ProgressLineTests {
  let mib: Int64 = 1 << 20

  /// A terminal that reports no size (0 columns) takes $COLUMNS, as curl and wget do; a size
  /// it reports wins, and nothing usable gives 80.
  @Test func widthFallsBackToCOLUMNS() {
    #expect(Terminal.width(reported: 0, columns: "30") == 30)
    #expect(Terminal.width(reported: Int?.none, columns: "30") == 30)
    #expect(Terminal.width(reported: 120, columns: "30") == 120)
    #expect(Terminal.width(reported: 0, columns: "wide") == 80)
    #expect(Terminal.width(reported: 0, columns: "-5") == 80)
    #expect(Terminal.width(reported: Int?.none, columns: String?.none) == 80)
  }

  @Test func knownTotalAtEighty() {
    let line = ProgressLine.render(
      name: "ubuntu.iso", progress: Fixtures.progress(412 * mib, of: 1024 * mib, speed: 83.2 * 1_048_576),
      width: 80)
    #expect(line.count <= 79)
    #expect(line.hasPrefix("ubuntu.iso   40% ━"))
    #expect(line.hasSuffix("  412 MiB / 1.00 GiB  83.2 MiB/s  ETA 8s"))
    #expect(line.contains("─"))
  }

  @Test func exactLayout() {
    let line = ProgressLine.render(
      name: "a.bin", progress: Fixtures.progress(50, of: 100, speed: 10), width: 60)
    // 59 columns: name, percent, a bar of what is left (17), details.
    #expect(
      line == "a.bin   50% " + String(repeating: "━", count: 8) + String(repeating: "─", count: 9)
        + "  50 B / 100 B  10 B/s  ETA 5s")
  }

  @Test(arguments: [10, 20, 30, 40, 50, 60, 80, 120, 200, 1000])
  func neverWiderThanTheTerminal(width: Int) {
    let names = ["x", "ubuntu-24.04.1-desktop-amd64-with-a-very-long-name.iso", "日本語のファイル.txt"]
    let snapshots = [
      Fixtures.progress(0, of: 0), Fixtures.progress(0, of: nil), Fixtures.progress(123, of: 456, speed: 1),
      Fixtures.progress(Int64.max / 2, of: Int64.max, speed: 1e18, connections: 64),
      Fixtures.progress(5, of: nil, speed: .nan),
    ]
    for name in names {
      for progress in snapshots {
        for tick in 0..<3 {
          let line = ProgressLine.render(name: name, progress: progress, width: width, tick: tick)
          #expect(line.count <= max(1, width - 1), "\(line)")
          #expect(!line.contains("\n") && !line.contains("\r"))
        }
      }
    }
  }

  @Test func unknownTotalBouncesAndHasNoPercentOrETA() {
    let progress = Fixtures.progress(5 * mib, of: nil, speed: Double(mib))
    let first = ProgressLine.render(name: "stream", progress: progress, width: 80, tick: 0)
    let later = ProgressLine.render(name: "stream", progress: progress, width: 80, tick: 7)
    #expect(!first.contains("%") && !first.contains("ETA"))
    #expect(first.hasSuffix("  5.00 MiB  1.00 MiB/s"))
    #expect(first != later)
    #expect(first.count == later.count)
  }

  @Test func zeroSpeedHasNoETA() {
    let line = ProgressLine.render(name: "f", progress: Fixtures.progress(1, of: 10), width: 80)
    #expect(line.hasSuffix("1 B / 10 B  0 B/s  ETA --"))
  }

  @Test func complete() {
    let line = ProgressLine.render(name: "f", progress: Fixtures.progress(10, of: 10, speed: 5), width: 80)
    #expect(line.contains(" 100% "))
    #expect(!line.contains("─"))
    #expect(line.hasSuffix("ETA 0s"))
    // An empty file is complete too.
    #expect(
      ProgressLine.render(name: "f", progress: Fixtures.progress(0, of: 0), width: 80).contains(" 100% "))
  }

  @Test func percentRoundsDown() {
    let line = ProgressLine.render(name: "f", progress: Fixtures.progress(999, of: 1000), width: 80)
    #expect(line.contains("  99% "))
  }

  @Test func connectionsShownWhenMoreThanOne() {
    let one = ProgressLine.render(
      name: "f", progress: Fixtures.progress(1, of: 2, connections: 1), width: 100)
    let four = ProgressLine.render(
      name: "f", progress: Fixtures.progress(1, of: 2, connections: 4), width: 100)
    #expect(!one.contains("×"))
    #expect(four.hasSuffix("  ×4"))
  }

  @Test func veryLargeNumbers() {
    let line = ProgressLine.render(
      name: "huge", progress: Fixtures.progress(Int64.max - 1, of: Int64.max, speed: 1e30), width: 120)
    #expect(line.contains("8.00 EiB / 8.00 EiB"))
  }

  @Test func narrowTerminalDropsBarThenDetails() {
    let progress = Fixtures.progress(412 * mib, of: 1024 * mib, speed: 83.2 * 1_048_576, connections: 2)
    let name = "ubuntu-24.04-desktop-amd64.iso"
    let wide = ProgressLine.render(name: name, progress: progress, width: 120)
    #expect(wide.contains(name) && wide.contains("━"))
    let medium = ProgressLine.render(name: name, progress: progress, width: 70)
    #expect(medium.contains("ETA") && medium.contains("…"))
    let narrow = ProgressLine.render(name: name, progress: progress, width: 40)
    #expect(!narrow.contains("━") && !narrow.contains("─"))
    #expect(narrow.contains("40%"))
    let tiny = ProgressLine.render(name: name, progress: progress, width: 12)
    #expect(tiny.count <= 11)
  }

  @Test func controlCharactersInNamesAreNeutralized() {
    let line = ProgressLine.render(
      name: "evil\u{1B}[2Jname\n", progress: Fixtures.progress(1, of: 2), width: 80)
    #expect(!line.contains("\u{1B}") && !line.contains("\n"))
    #expect(line.hasPrefix("evil?[2Jname?"))
  }

  @Test func middleTruncation() {
    #expect(ProgressLine.truncate("abcdefghij", to: 5) == "ab…ij")
    #expect(ProgressLine.truncate("abcdefghij", to: 6) == "abc…ij")
    #expect(ProgressLine.truncate("abc", to: 5) == "abc")
    #expect(ProgressLine.truncate("abc", to: 1) == "…")
    #expect(ProgressLine.truncate("abc", to: 0) == "")
  }

  @Test func bars() {
    #expect(ProgressLine.bar(fraction: 0, width: 4) == "────")
    #expect(ProgressLine.bar(fraction: 0.5, width: 4) == "━━──")
    #expect(ProgressLine.bar(fraction: 1, width: 4) == "━━━━")
    #expect(ProgressLine.bar(fraction: 0.5, width: 0) == "")
    for tick in -3..<40 {
      let bounce = ProgressLine.bounce(tick: tick, width: 10)
      #expect(bounce.count == 10)
      #expect(bounce.filter { $0 == "━" }.count == 2)
    }
  }

  @Test(arguments: [
    (0.0, "0s"), (0.2, "1s"), (59.0, "59s"), (60.0, "1m00s"), (62.0, "1m02s"), (3599.0, "59m59s"),
    (3600.0, "1h00m"), (7500.0, "2h05m"), (86_400.0, "1d00h"), (273_600.0, "3d04h"), (1e12, ">99d"),
    (-1.0, "--"), (Double.nan, "--"), (Double.infinity, "--"),
  ])
  func etas(seconds: Double, text: String) {
    #expect(ProgressLine.formatETA(seconds) == text)
  }

  @Test func durationsAndFixed() {
    #expect(ProgressLine.formatDuration(0.421) == "0.42 s")
    #expect(ProgressLine.formatDuration(12.34) == "12.3 s")
    #expect(ProgressLine.formatDuration(62.4) == "1m02s")
    #expect(ProgressLine.formatFixed(2, decimals: 1) == "2.0")
    #expect(ProgressLine.formatFixed(0.05, decimals: 2) == "0.05")
    #expect(ProgressLine.formatFixed(1.999, decimals: 2) == "2.00")
    #expect(ProgressLine.formatFixed(-1.5, decimals: 1) == "-1.5")
    #expect(ProgressLine.formatFixed(7, decimals: 0) == "7")
  }

  @Test func plainLine() {
    #expect(
      ProgressLine.plain(
        name: "a.iso", progress: Fixtures.progress(412 * mib, of: 1024 * mib, speed: 2 * 1_048_576))
        == "a.iso 40%, 412 MiB of 1.00 GiB, 2.00 MiB/s, ETA 5m06s")
    #expect(
      ProgressLine.plain(name: "s", progress: Fixtures.progress(5, of: nil, speed: 0)) == "s 5 B, 0 B/s")
  }
}

@Suite("Waiting line")
struct WaitingLineTests {
  let reason = HaulError(
    .network, "cannot connect: Failed to connect to 127.0.0.1 port 1: Couldn't connect to server")

  @Test func saysWhatItWaitsFor() {
    let notice = Fixtures.retry(
      attempt: 1, max: 10, delay: 4, reason: HaulError(.network, "connection reset"))
    #expect(
      ProgressLine.waiting(name: "ubuntu.iso", seconds: 3.2, notice: notice, width: 80)
        == "ubuntu.iso  retrying in 4 s: connection reset, attempt 2 of 10")
    #expect(
      ProgressLine.waiting(name: "", seconds: 0, notice: notice, width: 80)
        == "retrying now: connection reset, attempt 2 of 10")
    #expect(
      ProgressLine.waiting(name: "a", seconds: 125, notice: notice, width: 80)
        == "a  retrying in 2m05s: connection reset, attempt 2 of 10")
  }

  @Test(arguments: [10, 20, 40, 60, 80, 200])
  func fitsTheWidth(width: Int) {
    let notice = Fixtures.retry(attempt: 9, max: 10, delay: 30, reason: reason)
    for name in ["x", "ubuntu-24.04.1-desktop-amd64-with-a-very-long-name.iso", "padded      "] {
      let line = ProgressLine.waiting(name: name, seconds: 30, notice: notice, width: width)
      #expect(line.count <= width - 1, "\(line)")
      if width >= 60 {
        #expect(line.contains("retrying in 30 s: cannot") && line.hasSuffix(", attempt 10 of 10"))
      }
    }
  }

  @Test func attempts() {
    #expect(ProgressLine.attemptText(Fixtures.retry(attempt: 1, max: 2, reason: reason)) == "attempt 2 of 2")
    #expect(ProgressLine.attemptText(Fixtures.retry(attempt: 3, max: Int.max, reason: reason)) == "attempt 4")
    #expect(ProgressLine.formatWait(0.2) == "1 s" && ProgressLine.formatWait(59) == "59 s")
    #expect(ProgressLine.formatWait(61) == "1m01s" && ProgressLine.formatWait(-1) == "0 s")
  }
}
