import Haul

/// What the display knows of one download, from its events: the name, the latest progress,
/// and whether it is waiting to try again. Shared by the single and the batch display.
///
/// Until the library has measured a speed (its first progress event says 0 B/s: one sample
/// is no rate), the view uses the average since the download started.
struct DownloadView: Sendable {
  /// The file's name, once the download has started.
  private(set) var name: String?
  /// What to call the download before it has started (the name expected from `-o` or the URL).
  let label: String?
  private(set) var progress: DownloadProgress?
  /// The wait before the next attempt: when it ends (seconds on the reporter's clock), and why.
  private(set) var waiting: (until: Double, notice: RetryNotice)?
  /// After `.completed` or `.failed`: later events (a late progress tick) are ignored.
  private(set) var isFinished = false
  private var start: (time: Double, bytes: Int64)?
  private var librarySpeedSeen = false

  init(label: String? = nil) { self.label = label }

  /// Takes in `event` at `time`; false when it came after the end and should be ignored.
  mutating func record(_ event: DownloadEvent, at time: Double) -> Bool {
    guard !isFinished else { return false }
    switch event {
    case .started(let start):
      name = start.file.lastPathComponent
      if self.start == nil { self.start = (time, start.resumedFrom) }
      waiting = nil
    case .progress(let update):
      progress = measured(update, at: time)
      if let waiting, time >= waiting.until { self.waiting = nil }
    case .paused(let update):
      progress = update
    case .retrying(let notice):
      waiting = (time + max(0, notice.delay), notice)
    case .completed, .failed:
      isFinished = true
      waiting = nil
    case .resumed, .restarted:
      break
    }
    return true
  }

  /// The terminal line at `time`: the wait, or the progress once the download has started.
  /// The name is padded to `nameWidth` columns, so that the lines of a batch align.
  func line(width: Int, at time: Double, tick: Int, nameWidth: Int = 0) -> String? {
    let shown = ProgressLine.sanitize(name ?? label ?? "")
    let padded = shown + String(repeating: " ", count: max(0, nameWidth - shown.count))
    if let waiting {
      return ProgressLine.waiting(
        name: padded, seconds: waiting.until - time, notice: waiting.notice, width: width)
    }
    guard name != nil, let progress else { return nil }
    return ProgressLine.render(name: padded, progress: progress, width: width, tick: tick)
  }

  /// `update`, with the average speed since the start while the library reports none yet.
  private mutating func measured(_ update: DownloadProgress, at time: Double) -> DownloadProgress {
    if update.bytesPerSecond > 0 { librarySpeedSeen = true }
    guard !librarySpeedSeen, update.bytesPerSecond == 0, let start, time > start.time,
      update.bytes > start.bytes
    else { return update }
    return DownloadProgress(
      bytes: update.bytes, totalBytes: update.totalBytes,
      bytesPerSecond: Double(update.bytes - start.bytes) / (time - start.time),
      connections: update.connections)
  }
}
