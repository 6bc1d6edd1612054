import Haul

/// The one-line progress display, fitted to a terminal width.
///
/// `ubuntu.iso   41% ━━━━━━━━━━──────────────  412 MiB / 1.00 GiB  83.2 MiB/s  ETA 7s`
///
/// Pure: the same input always gives the same text, and the text never takes more than
/// `width - 1` columns (the last column is left free so that terminals do not wrap).
enum ProgressLine {
  static let filled: Character = "━"
  static let empty: Character = "─"
  static let minimumBarWidth = 10
  static let maximumBarWidth = 40

  /// - Parameters:
  ///   - name: the file's name.
  ///   - progress: the latest snapshot.
  ///   - width: the terminal's width in columns.
  ///   - tick: a frame counter that moves the bouncing bar when the size is unknown.
  static func render(name: String, progress: DownloadProgress, width: Int, tick: Int = 0) -> String {
    let available = max(1, width - 1)
    let fraction = progress.fraction.map { min(1, max(0, $0)) }

    // The parts after the bar, least important last; they are dropped from the end when space is short.
    var details: [String] = []
    if let total = progress.totalBytes {
      details.append(ByteQuantity.format(progress.bytes) + " / " + ByteQuantity.format(total))
    } else {
      details.append(ByteQuantity.format(progress.bytes))
    }
    details.append(ByteQuantity.formatRate(progress.bytesPerSecond))
    if fraction != nil {
      details.append("ETA " + (progress.secondsRemaining.map(formatETA) ?? "--"))
    }
    if progress.connections > 1 { details.append("×\(progress.connections)") }

    let percent = fraction.map { pad(String(Int(($0 * 100).rounded(.down))) + "%", to: 4) }
    let safeName = sanitize(name)
    let nameFloor = min(safeName.count, 20)
    let nameMinimum = min(safeName.count, 8)

    while true {
      let right = details.joined(separator: "  ")
      // Columns used by everything but the name and the bar.
      let fixed = (percent.map { 2 + $0.count } ?? 0) + (right.isEmpty ? 0 : 2 + right.count)
      let room = available - fixed
      if room - 1 >= nameFloor + minimumBarWidth {
        // Name first (up to its full length), then the bar takes the rest up to its maximum.
        let nameWidth = min(safeName.count, room - 1 - minimumBarWidth)
        let barWidth = min(maximumBarWidth, room - 1 - nameWidth)
        let bar =
          fraction.map { self.bar(fraction: $0, width: barWidth) }
          ?? bounce(tick: tick, width: barWidth)
        return assemble(truncate(safeName, to: nameWidth), percent, bar, right)
      }
      if room >= nameMinimum || details.isEmpty {
        let nameWidth = max(0, min(safeName.count, room))
        return clip(assemble(truncate(safeName, to: nameWidth), percent, nil, right), to: available)
      }
      details.removeLast()
    }
  }

  /// The line of a download waiting to try again, in place of its speed and ETA:
  /// `ubuntu.iso  retrying in 4 s: connection reset, attempt 2 of 10`. The reason is
  /// shortened first, then the name, to fit `width - 1` columns.
  static func waiting(name: String, seconds: Double, notice: RetryNotice, width: Int) -> String {
    let available = max(1, width - 1)
    let when = seconds > 0 ? "retrying in " + formatWait(seconds) : "retrying now"
    let attempt = ", " + attemptText(notice)
    var reason = sanitize(notice.reason.message)
    var safeName = sanitize(name)
    // Padding (to align a batch's lines) goes first when the name must be shortened.
    if safeName.count > max(8, available / 3) {
      while safeName.last == " " { safeName.removeLast() }
    }
    // The name takes up to a third of the line, less (down to 8) to leave the reason 12.
    let fixed = when.count + 2 + attempt.count + (safeName.isEmpty ? 0 : 2)
    var nameWidth = min(safeName.count, max(8, available / 3))
    let shortfall = 12 - (available - fixed - nameWidth)
    if shortfall > 0 { nameWidth = max(min(safeName.count, 8), nameWidth - shortfall) }
    let prefix = safeName.isEmpty ? "" : truncate(safeName, to: nameWidth) + "  "
    let room = available - prefix.count - when.count - 2 - attempt.count
    if reason.count > room { reason = room >= 4 ? String(reason.prefix(room - 1)) + "…" : "" }
    let line = prefix + when + (reason.isEmpty ? "" : ": " + reason) + attempt
    return clip(line, to: available)
  }

  /// `attempt 2 of 10`: the attempt that comes next (`attempt 2` when there is no limit).
  static func attemptText(_ notice: RetryNotice) -> String {
    let next = notice.attempt == Int.max ? notice.attempt : notice.attempt + 1
    return notice.maxAttempts == Int.max ? "attempt \(next)" : "attempt \(next) of \(notice.maxAttempts)"
  }

  /// `4 s` below a minute (rounded up, so that it reaches 0 only when the wait is over), else `1m02s`.
  static func formatWait(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds > 0 else { return "0 s" }
    let whole = seconds.rounded(.up)
    return whole < 60 ? String(Int(whole)) + " s" : formatETA(whole)
  }

  /// The plain progress line for logs (stderr not a terminal): no bar, no width limit.
  static func plain(name: String, progress: DownloadProgress) -> String {
    var parts: [String] = []
    if let fraction = progress.fraction {
      parts.append(String(Int((min(1, max(0, fraction)) * 100).rounded(.down))) + "%")
      parts.append(
        ByteQuantity.format(progress.bytes) + " of " + ByteQuantity.format(progress.totalBytes ?? 0))
    } else {
      parts.append(ByteQuantity.format(progress.bytes))
    }
    parts.append(ByteQuantity.formatRate(progress.bytesPerSecond))
    if let remaining = progress.secondsRemaining { parts.append("ETA " + formatETA(remaining)) }
    if progress.connections > 1 { parts.append("\(progress.connections) connections") }
    return sanitize(name) + " " + parts.joined(separator: ", ")
  }

  // MARK: - Pieces

  static func bar(fraction: Double, width: Int) -> String {
    guard width > 0 else { return "" }
    let done = min(width, max(0, Int((fraction * Double(width)).rounded(.down))))
    return String(repeating: filled, count: done) + String(repeating: empty, count: width - done)
  }

  /// A short filled segment sliding back and forth, for downloads of unknown size.
  static func bounce(tick: Int, width: Int) -> String {
    guard width > 0 else { return "" }
    let segment = min(width, max(1, width / 5))
    let span = width - segment
    guard span > 0 else { return String(repeating: filled, count: width) }
    let phase = ((tick % (2 * span)) + 2 * span) % (2 * span)
    let start = phase <= span ? phase : 2 * span - phase
    return String(repeating: empty, count: start) + String(repeating: filled, count: segment)
      + String(repeating: empty, count: span - start)
  }

  /// `7s`, `1m02s`, `2h05m`, `3d04h`; `--` for nonsense.
  static func formatETA(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "--" }
    guard seconds < 100 * 86_400 else { return ">99d" }
    let whole = Int(seconds.rounded(.up))
    if whole < 60 { return "\(whole)s" }
    if whole < 3600 { return "\(whole / 60)m" + twoDigits(whole % 60) + "s" }
    if whole < 86_400 { return "\(whole / 3600)h" + twoDigits(whole % 3600 / 60) + "m" }
    return "\(whole / 86_400)d" + twoDigits(whole % 86_400 / 3600) + "h"
  }

  /// `0.42 s`, `12.3 s`, `1m02s`, for summaries.
  static func formatDuration(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "0 s" }
    if seconds < 10 { return formatFixed(seconds, decimals: 2) + " s" }
    if seconds < 60 { return formatFixed(seconds, decimals: 1) + " s" }
    return formatETA(seconds.rounded())
  }

  /// `value` with exactly `decimals` digits after the point, without Foundation.
  static func formatFixed(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int64((abs(value) * scale).rounded())
    let whole = scaled / Int64(scale)
    var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
    if decimals > 0 {
      var fraction = String(scaled % Int64(scale))
      while fraction.count < decimals { fraction = "0" + fraction }
      text += "." + fraction
    }
    return text
  }

  /// Control characters would corrupt the terminal; show them as `?`.
  static func sanitize(_ text: String) -> String {
    String(text.map { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } ? "?" : $0 })
  }

  /// Shortens from the middle, keeping the start and the extension: `ubuntu-2…amd64.iso`.
  static func truncate(_ text: String, to width: Int) -> String {
    guard text.count > width else { return text }
    guard width > 1 else { return width == 1 ? "…" : "" }
    let tail = (width - 1) / 2
    let head = width - 1 - tail
    return String(text.prefix(head)) + "…" + String(text.suffix(tail))
  }

  private static func clip(_ text: String, to width: Int) -> String {
    text.count <= width ? text : String(text.prefix(width))
  }

  private static func assemble(_ name: String, _ percent: String?, _ bar: String?, _ right: String) -> String
  {
    var line = name
    if let percent { line += (line.isEmpty ? "" : "  ") + percent }
    if let bar { line += " " + bar }
    if !right.isEmpty { line += (line.isEmpty ? "" : "  ") + right }
    return line
  }

  private static func pad(_ text: String, to width: Int) -> String {
    String(repeating: " ", count: max(0, width - text.count)) + text
  }

  private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
