import Haul

/// What the user sees of a batch: a line per finished or failed download and messages, each
/// prefixed with the file's name; on a terminal, below them, a line per running download (as
/// many as the terminal's height allows, the rest counted) and one for the whole batch:
///
/// ```
/// haul: ✓ saved debian.iso (631 MiB in 12.0 s, 52.6 MiB/s)
/// ubuntu.iso   41% ━━━━━━━━━━━━━━────────────────────  1.21 GiB / 2.87 GiB  48.3 MiB/s  ETA 35s
/// fedora.iso   retrying in 4 s: connection reset, attempt 2 of 10
/// [1/3] 2 running · 48.3 MiB/s
/// ```
///
/// The block is redrawn in place, one write per frame, every line fitted to the width.
/// A value type owned by the task that consumes the batch's events.
struct BatchReporter: Sendable {
  let style: Reporter.Style
  let sink: OutputSink
  /// Grows when downloads join a running batch (`haul run`: added while it runs).
  private(set) var urls: [String]
  let now: @Sendable () -> Double
  let width: @Sendable () -> Int
  let height: @Sendable () -> Int
  /// What to call each download before it has started (its expected file name).
  private(set) var labels: [String?]

  /// The downloads that have begun and not ended, by their index in `urls`.
  private var running: [Int: DownloadView] = [:]
  private var done = 0
  private var failed = 0
  /// Lines of the block on screen; the cursor is at the end of the last one.
  private var shownLines = 0
  private var lastDraw = -Double.infinity
  private var frame = 0

  init(
    style: Reporter.Style, sink: OutputSink, urls: [String], now: @escaping @Sendable () -> Double,
    width: @escaping @Sendable () -> Int = { 80 }, height: @escaping @Sendable () -> Int = { 24 },
    labels: [String?] = []
  ) {
    self.labels = labels
    self.style = style
    self.sink = sink
    self.urls = urls
    self.now = now
    self.width = width
    self.height = height
  }

  mutating func handle(_ index: Int, _ event: DownloadEvent) {
    var view = running[index] ?? DownloadView(label: index < labels.count ? labels[index] : nil)
    // Nothing after the end: the library may send one more progress tick after a failure.
    guard view.record(event, at: now()) else { return }
    let label = ProgressLine.sanitize(view.name ?? urls[index])
    running[index] = view.isFinished ? nil : view
    if style == .json {
      sink.stdout(JSONEventLine.encode(event, source: urls[index]) + "\n")
      if case .failed(let error) = event { sink.stderr(Self.prefixed(Reporter.errorText(error), label)) }
      return
    }
    switch event {
    case .started, .paused, .resumed:
      drawIfDue(force: true)
    case .progress:
      drawIfDue(force: false)
    case .restarted(let reason):
      message(Self.prefixed("haul: " + ProgressLine.sanitize(reason) + "; starting over\n", label))
    case .retrying(let notice):
      message(Self.prefixed("haul: " + Reporter.retryText(notice) + "\n", label))
    case .completed(let result):
      done += 1
      message(Reporter.summary(result, path: Reporter.relativePath(result.file)) + "\n")
    case .failed(let error):
      done += 1
      failed += 1
      message(Self.prefixed(Reporter.errorText(error), label), isFailure: true)
    }
  }

  /// A download joins the batch (`haul run`: one added or resumed while it runs); its index.
  mutating func append(url: String, label: String?) -> Int {
    urls.append(url)
    while labels.count < urls.count - 1 { labels.append(nil) }
    labels.append(label)
    return urls.count - 1
  }

  /// A running download leaves the block without finishing (paused or cancelled while the
  /// batch runs), with `note` above the block (`paused`) unless quiet.
  mutating func leave(_ index: Int, note: String) {
    guard let view = running.removeValue(forKey: index), style != .json else { return }
    let label = ProgressLine.sanitize(view.name ?? view.label ?? urls[index])
    message(Self.prefixed("haul: " + note + "\n", label))
  }

  /// The clock moved: countdowns of downloads waiting to retry are redrawn.
  mutating func tick() {
    guard style == .terminal, running.values.contains(where: { $0.waiting != nil }) else { return }
    drawIfDue(force: true)
  }

  /// The closing line (`haul: 1000 URLs: 998 done, 2 failed`); nil statuses were not started.
  /// What the closing count counts: the command line's URLs, or a manager run's downloads.
  var noun = (one: "URL", many: "URLs")

  /// `others`: what else the count says after the outcomes, with how many (a manager run's
  /// downloads paused or removed while it ran), counted in the total too.
  mutating func finish(statuses: [Int32?], interrupted: Bool, others: [(count: Int, what: String)] = []) {
    if shownLines > 0 { sink.stderr(clearText()) }
    shownLines = 0
    guard style != .json else { return }
    let succeeded = statuses.filter { $0 == ExitStatus.success }.count
    let stopped = statuses.filter { $0 == ExitStatus.interrupted }.count
    let failures = statuses.filter { $0 != nil }.count - succeeded - stopped
    let notStarted = statuses.filter { $0 == nil }.count
    guard style != .quiet || failures > 0 else { return }
    let total = statuses.count + others.reduce(0) { $0 + $1.count }
    var text = "haul: \(total) \(total == 1 ? noun.one : noun.many): \(succeeded) done"
    if failures > 0 { text += ", \(failures) failed" }
    if stopped > 0 { text += ", \(stopped) stopped" }
    if notStarted > 0 { text += ", \(notStarted) not started" }
    for (count, what) in others where count > 0 { text += ", \(count) \(what)" }
    if interrupted { text += "; run the same command again to resume" }
    sink.stderr(text + "\n")
  }

  /// `haul: name: …` for each line of `text`.
  static func prefixed(_ text: String, _ label: String) -> String {
    text.split(separator: "\n").map { line in
      "haul: \(label): " + (line.hasPrefix("haul: ") ? line.dropFirst(6) : line[...])
    }.joined(separator: "\n") + "\n"
  }

  // MARK: - The block at the bottom

  /// The block's lines at `time`: running downloads in the order given, then the batch's line.
  func blockLines(at time: Double) -> [String] {
    let columns = width()
    let indices = running.keys.sorted()
    let nameWidth = min(
      indices.compactMap {
        running[$0].flatMap { ($0.name ?? $0.label).map { ProgressLine.sanitize($0).count } }
      }
      .max() ?? 0,
      max(8, columns / 3))
    var lines = indices.compactMap {
      running[$0]?.line(width: columns, at: time, tick: frame, nameWidth: nameWidth)
    }
    // Leave the batch's line and one line of what scrolled by.
    let room = max(0, height() - 2)
    if lines.count > room {
      let kept = max(0, room - 1)
      lines = Array(lines.prefix(kept)) + ["… and \(lines.count - kept) more running"]
    }
    let speed = running.values.reduce(0) { $0 + ($1.progress?.bytesPerSecond ?? 0) }
    var total = "[\(done)/\(urls.count)] \(running.count) running · " + ByteQuantity.formatRate(speed)
    if failed > 0 { total += " · \(failed) failed" }
    lines.append(total)
    return lines.map { String($0.prefix(max(1, columns - 1))) }
  }

  /// Moves to the block's first line and clears it and everything below.
  private func clearText() -> String {
    shownLines > 0 ? Terminal.up(shownLines - 1) + "\r" + Terminal.clearBelow : ""
  }

  /// The block, drawn over the one on screen.
  private mutating func blockText() -> String {
    let lines = blockLines(at: now())
    var text = Terminal.up(shownLines - 1) + "\r"
    text += lines.map { $0 + Terminal.clearToEnd }.joined(separator: "\n")
    if lines.count < shownLines { text += Terminal.clearBelow }
    shownLines = lines.count
    return text
  }

  /// A message above the block (in quiet mode only failures), in the same write as the redraw.
  private mutating func message(_ text: String, isFailure: Bool = false) {
    guard style != .quiet || isFailure else { return }
    guard style == .terminal else {
      sink.stderr(text)
      return
    }
    let cleared = clearText()
    shownLines = 0
    frame += 1
    lastDraw = now()
    sink.stderr(cleared + text + blockText())
  }

  /// Redraws the block, at most ten times a second unless `force`d.
  private mutating func drawIfDue(force: Bool) {
    guard style == .terminal else { return }
    let time = now()
    guard force || time - lastDraw >= Reporter.redrawInterval else { return }
    lastDraw = time
    frame += 1
    sink.stderr(blockText())
  }
}
