import Dispatch
import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Turns download events into what the user sees: a progress line, log lines, or JSON.
///
/// A value type owned by the task that consumes `Download.events`; time, width and output are
/// injected so tests can drive it.
struct Reporter: Sendable {
  enum Style: Equatable, Sendable {
    /// `-q`: errors only.
    case quiet
    /// `--json`: one object per event on stdout; errors also on stderr.
    case json
    /// stderr is a terminal: one progress line redrawn in place.
    case terminal
    /// stderr is a file or pipe: a plain progress line now and then.
    case plain
  }

  /// Shortest time between redraws of the terminal line.
  static let redrawInterval = 0.1
  /// How often the terminal display is woken without an event (a retry's countdown).
  static let tickInterval = 0.25
  /// Longest time between plain progress lines (they also appear at every 10%).
  static let plainInterval = 5.0

  let style: Style
  let sink: OutputSink
  /// Monotonic seconds.
  let now: @Sendable () -> Double
  /// The terminal's width in columns.
  let width: @Sendable () -> Int
  /// How a file's path is shown in messages.
  let displayPath: @Sendable (URL) -> String
  /// What an interrupted download left on disk (the events may lag behind it).
  let savedProgress: @Sendable (URL) -> SavedProgress?
  /// The command's words for the library's hints.
  let wording: CommandWording

  private(set) var file: URL?
  /// The download as the display sees it (name, measured progress, a wait before a retry).
  private var view: DownloadView
  private var startsSeen = 0
  private var lineShown = false
  private var lastDraw = -Double.infinity
  /// Frames drawn, to move the bouncing bar of a download of unknown size.
  private var frame = 0
  private var lastPlainTime = -Double.infinity
  private var lastPlainDecile = -1

  init(
    style: Style, sink: OutputSink,
    now: @escaping @Sendable () -> Double,
    width: @escaping @Sendable () -> Int = { 80 },
    displayPath: @escaping @Sendable (URL) -> String = Reporter.relativePath,
    savedProgress: @escaping @Sendable (URL) -> SavedProgress? = { SavedProgress.load(for: $0) },
    label: String? = nil, wording: CommandWording = CommandWording()
  ) {
    view = DownloadView(label: label)
    self.wording = wording
    self.savedProgress = savedProgress
    self.style = style
    self.sink = sink
    self.now = now
    self.width = width
    self.displayPath = displayPath
  }

  mutating func handle(_ event: DownloadEvent) {
    let event = wording.translate(event)
    // Nothing after the end: the library may send one more progress tick after a failure.
    guard view.record(event, at: now()) else { return }
    if case .started(let start) = event { file = start.file }
    if style == .json {
      sink.stdout(JSONEventLine.encode(event) + "\n")
      if case .failed(let error) = event { sink.stderr(Self.errorText(error, held: heldAmount())) }
      return
    }
    switch event {
    case .started(let start):
      startsSeen += 1
      if startsSeen == 1 {
        lastPlainTime = now()
        if let total = start.totalBytes, total > 0 {
          lastPlainDecile = Int((Double(start.resumedFrom) / Double(total) * 10).rounded(.down))
        }
        message(Self.startText(start, path: Self.shownPath(start.file, displayPath)))
      } else if start.resumedFrom > 0 {
        message("resuming at " + Self.amount(start.resumedFrom, of: start.totalBytes))
      }
    case .progress:
      showProgress()
    case .paused, .resumed:
      break
    case .restarted(let reason):
      message(ProgressLine.sanitize(reason) + "; starting over")
    case .retrying(let notice):
      message(Self.retryText(notice))
      if !lineShown { draw() }  // The wait, in place of the speed and ETA.
    case .completed(let result):
      guard style != .quiet else { return }
      clearLine()
      sink.stderr(Self.summary(result, path: Self.shownPath(result.file, displayPath)) + "\n")
    case .failed(let error) where Self.closedByReader(error):
      // Not the user's mistake, nor a failure worth a hint: one short line, none when quiet.
      guard style != .quiet else { return }
      clearLine()
      let target = file.flatMap { Self.shownPath($0, displayPath) }.map(ProgressLine.sanitize)
      sink.stderr("haul: stopped: the reader of \(target ?? "standard output") closed it\n")
    case .failed(let error):
      clearLine()
      sink.stderr(Self.errorText(error, held: heldAmount()))
    }
  }

  /// Whether the download stopped because the reading end of its pipe was closed (`haul -o -
  /// URL | head -c 100`, a FIFO whose reader left): a write failed with EPIPE (exit 3).
  static func closedByReader(_ error: HaulError) -> Bool {
    error.category == .fileSystem && (error.underlying as? SystemError)?.errno == EPIPE
  }

  /// The clock moved (a few times a second on a terminal): a wait's countdown is redrawn.
  mutating func tick() {
    guard style == .terminal, view.waiting != nil, !view.isFinished else { return }
    draw()
  }

  /// Bytes held and the total, from disk when possible, else from the last progress event.
  private func heldAmount() -> (bytes: Int64, total: Int64?)? {
    if let file, let saved = savedProgress(file) { return (saved.bytes, saved.totalBytes) }
    return view.progress.map { ($0.bytes, $0.totalBytes) }
  }

  // MARK: - Texts

  /// The file as the texts show it; nil for standard output (`-o -`), which is not a file the
  /// user would look for.
  static func shownPath(_ file: URL, _ displayPath: (URL) -> String) -> String? {
    file.path == DownloadDestination.standardOutputPath ? nil : displayPath(file)
  }

  /// `downloading ubuntu.iso (1.00 GiB)`; `path` nil: standard output.
  static func startText(_ start: DownloadStart, path: String?) -> String {
    let size = start.totalBytes.map(ByteQuantity.format) ?? "size unknown"
    guard let path else { return "downloading to standard output (\(size))" }
    let shown = ProgressLine.sanitize(path)
    if start.resumedFrom > 0 {
      return "resuming \(shown) at " + amount(start.resumedFrom, of: start.totalBytes)
    }
    return "downloading \(shown) (\(size))"
  }

  static func retryText(_ notice: RetryNotice) -> String {
    ProgressLine.sanitize(notice.reason.message) + "; retrying in "
      + ProgressLine.formatFixed(notice.delay, decimals: 1) + " s (" + ProgressLine.attemptText(notice) + ")"
  }

  /// `✓ saved ubuntu.iso (1.00 GiB in 12.3 s, 83.2 MiB/s)` and friends; `path` nil: standard
  /// output (`✓ sent to standard output (…)`).
  static func summary(_ result: DownloadResult, path: String?) -> String {
    let shown = path.map(ProgressLine.sanitize) ?? "standard output"
    if result.wasAlreadyComplete {
      if result.remoteChanged {
        return
          "! \(shown) is complete, but the server's copy has changed since; --overwrite fetches the new one"
      }
      if let why = result.serverNotChecked {
        return
          "✓ \(shown) is already complete (not checked against the server: \(ProgressLine.sanitize(why)))"
      }
      return "✓ \(shown) is already complete"
    }
    var details =
      ByteQuantity.format(result.totalBytes) + " in " + ProgressLine.formatDuration(result.duration)
    if result.duration > 0, result.bytesReceived > 0 {
      details += ", " + ByteQuantity.formatRate(Double(result.bytesReceived) / result.duration)
    }
    if result.resumedFrom > 0 {
      details += "; resumed from " + ByteQuantity.format(result.resumedFrom)
    }
    return path == nil ? "✓ sent to standard output (\(details))" : "✓ saved \(shown) (\(details))"
  }

  /// `haul: message` and `haul: hint`, each ending in a newline.
  static func errorText(_ error: HaulError, held: (bytes: Int64, total: Int64?)? = nil) -> String {
    if error.category == .interrupted, error.hint != nil, let held {
      return "haul: stopped at " + amount(held.bytes, of: held.total)
        + "; run the same command again to resume\n"
    }
    var text = "haul: " + ProgressLine.sanitize(error.message) + "\n"
    if let hint = error.hint { text += "haul: " + ProgressLine.sanitize(hint) + "\n" }
    return text
  }

  /// `41.2 MiB of 100 MiB`, or just `41.2 MiB` when the total is unknown.
  static func amount(_ bytes: Int64, of total: Int64?) -> String {
    ByteQuantity.format(bytes) + (total.map { " of " + ByteQuantity.format($0) } ?? "")
  }

  /// The path relative to the current directory when it is inside it.
  @Sendable static func relativePath(_ file: URL) -> String {
    let path = file.path
    let directory = FileManager.default.currentDirectoryPath
    let prefix = directory.hasSuffix("/") ? directory : directory + "/"
    return path.hasPrefix(prefix) && path.count > prefix.count ? String(path.dropFirst(prefix.count)) : path
  }

  // MARK: - Drawing

  /// A line above the progress line (or a plain line), unless quiet.
  private mutating func message(_ text: String) {
    guard style != .quiet else { return }
    let redraw = lineShown
    clearLine()
    sink.stderr("haul: " + text + "\n")
    if redraw { draw() }
  }

  private mutating func showProgress() {
    guard let progress = view.progress else { return }
    switch style {
    case .quiet, .json:
      return
    case .terminal:
      let time = now()
      let finished = progress.totalBytes.map { progress.bytes >= $0 } ?? false
      guard time - lastDraw >= Self.redrawInterval || finished else { return }
      lastDraw = time
      frame += 1
      draw()
    case .plain:
      // Nothing to name before the download has started (and nothing has arrived).
      guard let name = view.name, view.waiting == nil else { return }
      if let total = progress.totalBytes, progress.bytes >= total { return }  // The summary follows.
      let time = now()
      let decile = progress.fraction.map { Int(($0 * 10).rounded(.down)) } ?? -1
      guard time - lastPlainTime >= Self.plainInterval || decile > lastPlainDecile else { return }
      lastPlainTime = time
      lastPlainDecile = max(lastPlainDecile, decile)
      sink.stderr("haul: " + ProgressLine.plain(name: name, progress: progress) + "\n")
    }
  }

  /// The terminal line: the progress, or the wait before the next attempt.
  private mutating func draw() {
    guard style == .terminal, let line = view.line(width: width(), at: now(), tick: frame) else { return }
    sink.stderr("\r" + line + Terminal.clearToEnd)
    lineShown = true
  }

  /// Removes the progress line so that a message can take its place.
  private mutating func clearLine() {
    guard lineShown else { return }
    sink.stderr("\r" + Terminal.clearToEnd)
    lineShown = false
  }
}
