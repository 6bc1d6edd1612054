import FoundationEssentials
import Haul

/// The screen of `haul ui`, as lines of text: a title, column heads, a row per download (name,
/// bar, percentage, speed, ETA, state), a message or prompt line and the keys. Pure: the same
/// downloads, state and size give the same lines; `update` gives what to send a terminal to go
/// from one screen to the next, rewriting only the lines that changed.
///
/// ```
/// haul ui  /home/me/.local/share/haul/catalog.sqlite      3 downloads, 1 active, 4.1 MiB/s, 4 at a time
///   NAME                               PROGRESS                       SPEED    ETA  STATE
/// > ubuntu.iso             ██████████░░░░░░░░░░░░  42%  4.1 MiB/s  6m02s  active
///   debian.iso             ██░░░░░░░░░░░░░░░░░░░░   8%          -      -  paused
/// ```
struct UIScreen {
  let size: TerminalSize

  /// One download's row.
  struct Item: Equatable {
    var id: DownloadID
    var name: String
    var state: DownloadState
    var bytes: Int64
    var totalBytes: Int64?
    var bytesPerSecond: Double
    /// Why it failed or waits, shown on the message line when it is selected.
    var problem: String?
    /// Its own rate limit, shown on the message line when it is selected.
    var rateLimit: Int64?

    init(
      id: DownloadID, name: String, state: DownloadState, bytes: Int64, totalBytes: Int64?,
      bytesPerSecond: Double, problem: String? = nil, rateLimit: Int64? = nil
    ) {
      self.id = id
      self.name = name
      self.state = state
      self.bytes = bytes
      self.totalBytes = totalBytes
      self.bytesPerSecond = bytesPerSecond
      self.problem = problem
      self.rateLimit = rateLimit
    }

    init(_ download: DownloadSnapshot) {
      self.init(
        id: download.id, name: ListTable.name(of: download), state: download.state, bytes: download.bytes,
        totalBytes: download.totalBytes,
        bytesPerSecond: download.state == .active ? download.bytesPerSecond : 0,
        problem: Self.problem(download.error, needsCredentials: download.needsCredentials),
        rateLimit: download.rateLimit)
    }

    /// A download of the catalog's owner (`haul.snapshot`).
    init(_ download: ControlSnapshot.Download) {
      let file = download.file.flatMap { $0.split(separator: "/").last.map(String.init) }
      self.init(
        id: download.id, name: ListTable.name(file: file ?? download.fallbackFileName, url: download.url),
        state: download.state,
        bytes: download.bytes, totalBytes: download.totalBytes,
        bytesPerSecond: download.state == .active ? download.bytesPerSecond : 0,
        problem: Self.problem(download.error, needsCredentials: download.needsCredentials),
        rateLimit: download.rateLimit)
    }

    private static func problem(_ error: HaulError?, needsCredentials: Bool) -> String? {
      if needsCredentials { return "it needs its credentials again (haul add it anew)" }
      return error.map { ProgressLine.sanitize($0.message) }
    }

    var row: UIState.Row { UIState.Row(id: id, name: name) }
  }

  /// What the title line says about the whole catalog.
  struct Summary: Equatable {
    var catalog: String
    var active: Int
    var bytesPerSecond: Double
    var maxConcurrent: Int
    /// The limit over all downloads (nil: none).
    var overallRateLimit: Int64?
    /// The process that owns the catalog, when `haul ui` is attached to another one.
    var owner: Int32?
    /// Said on the message line above anything else (the owner does not answer).
    var notice: String?

    init(
      catalog: String, active: Int, bytesPerSecond: Double, maxConcurrent: Int,
      overallRateLimit: Int64? = nil,
      owner: Int32? = nil, notice: String? = nil
    ) {
      self.catalog = catalog
      self.active = active
      self.bytesPerSecond = bytesPerSecond
      self.maxConcurrent = maxConcurrent
      self.overallRateLimit = overallRateLimit
      self.owner = owner
      self.notice = notice
    }
  }

  static let reverse = "\u{1B}[7m"
  static let bold = "\u{1B}[1m"
  static let plain = "\u{1B}[0m"
  static let minimumName = 12
  static let keysHelp =
    "↑↓ move  p pause  r resume  c cancel  d rm  + add  </> jobs  l/L limit  q quit"

  /// Lines above and below the rows.
  static let chrome = 4

  /// How many rows fit.
  var visibleRows: Int { max(0, size.rows - Self.chrome) }

  /// Whether the terminal is too small for anything but a note saying so.
  var isTooSmall: Bool { size.columns < 20 || size.rows < Self.chrome + 1 }

  /// Columns a line may use: the last one is left free, so no terminal wraps or scrolls.
  private var usable: Int { max(1, size.columns - 1) }

  func lines(items: [Item], state: UIState, summary: Summary) -> [String] {
    guard !isTooSmall else { return [String("terminal too small".prefix(usable))] }
    var lines = [title(items: items, summary: summary)]
    let layout = Layout(width: usable - 2)
    lines.append(Self.bold + fit("  " + layout.header) + Self.plain)
    let selected = state.selectedIndex(in: items.map(\.row))
    if items.isEmpty {
      lines.append(fit("  No downloads. Press + to add a URL."))
    }
    for index in items.indices.dropFirst(state.top).prefix(visibleRows) {
      let text = fit((index == selected ? "> " : "  ") + layout.row(items[index]))
      lines.append(index == selected ? Self.reverse + pad(text) + Self.plain : text)
    }
    while lines.count < size.rows - 2 { lines.append("") }
    lines.append(messageLine(items: items, selected: selected, state: state, summary: summary))
    lines.append(fit(Self.keysHelp))
    return lines
  }

  private func title(items: [Item], summary: Summary) -> String {
    let counts =
      "\(items.count) download\(items.count == 1 ? "" : "s"), \(summary.active) active, "
      + ByteQuantity.formatRate(summary.bytesPerSecond) + ", \(summary.maxConcurrent) at a time"
      + (summary.overallRateLimit.map { ", limit " + rate($0) } ?? "")
    let room = usable - counts.count - 2
    guard room >= 10 else { return fit(counts) }
    let owner = summary.owner.map { "  (owned by process \($0))" } ?? ""
    let left = ProgressLine.truncate("haul ui  " + summary.catalog + owner, to: room)
    return Self.bold + left + Self.plain + String(repeating: " ", count: usable - left.count - counts.count)
      + counts
  }

  private func messageLine(items: [Item], selected: Int?, state: UIState, summary: Summary) -> String {
    switch state.mode {
    case .adding(let text):
      return typing("Add URL (Enter adds, Esc cancels): ", text)
    case .limiting(let target, let text):
      func label(_ whose: String, _ now: Int64?) -> String {
        "Rate limit of " + whose + " (now " + rate(now) + "; 500K, 2M, 0 lifts it): "
      }
      switch target {
      case .download(let id, let name):
        let now = items.first { $0.id == id }?.rateLimit
        return typing(label(ProgressLine.truncate(name, to: max(1, usable / 3)), now), text)
      case .overall:
        return typing(label("all downloads together", summary.overallRateLimit), text)
      }
    case .confirmingRemoval(_, let name):
      let ending = "? Its files stay. y: remove, other keys: keep"
      return "Remove " + ProgressLine.truncate(name, to: max(1, usable - 7 - ending.count)) + ending
    case .browsing:
      if let notice = summary.notice { return fit(ProgressLine.sanitize(notice)) }
      if let message = state.message { return fit(ProgressLine.sanitize(message)) }
      if let selected, let problem = items[selected].problem {
        return fit(items[selected].name + ": " + problem)
      }
      if let selected, let limit = items[selected].rateLimit {
        return fit(items[selected].name + ": limited to " + rate(limit) + " (l changes it)")
      }
      return ""
    }
  }

  /// A prompt and what was typed, its end shown when it is long, and the cursor.
  private func typing(_ label: String, _ text: String) -> String {
    let label = fit(label)
    let room = max(1, usable - label.count - 1)
    let shown = ProgressLine.sanitize(text)
    return label + (shown.count > room ? "…" + String(shown.suffix(room - 1)) : shown) + "_"
  }

  private func rate(_ bytesPerSecond: Int64?) -> String {
    bytesPerSecond.map { ByteQuantity.formatRate(Double($0)) } ?? "none"
  }

  private func fit(_ text: String) -> String { ProgressLine.truncate(text, to: usable) }

  private func pad(_ text: String) -> String {
    text + String(repeating: " ", count: max(0, usable - text.count))
  }

  /// What to write to turn a terminal that shows `old` (nil: unknown, as after a resize) into
  /// one that shows `new`.
  static func update(from old: [String]?, to new: [String]) -> String {
    guard let old, old.count == new.count else {
      return "\u{1B}[H\u{1B}[2J"
        + new.enumerated().map { "\u{1B}[\($0.offset + 1);1H" + $0.element }.joined()
    }
    var out = ""
    for (index, line) in new.enumerated() where old[index] != line {
      out += "\u{1B}[\(index + 1);1H" + line + Self.plain + "\u{1B}[K"
    }
    return out
  }

  /// The columns of a row at a width: the name takes what the others leave; narrow terminals
  /// lose the bar, then the ETA, then the speed.
  struct Layout {
    let width: Int
    let bar: Int
    let speed: Bool
    let eta: Bool

    static let percent = 4
    static let speedWidth = 10
    static let etaWidth = 6
    static let stateWidth = 8

    init(width: Int) {
      self.width = width
      func fixed(bar: Int, speed: Bool, eta: Bool) -> Int {
        (bar > 0 ? bar + 1 : 0) + 2 + Self.percent + (speed ? 2 + Self.speedWidth : 0)
          + (eta ? 2 + Self.etaWidth : 0) + 2 + Self.stateWidth
      }
      let wanted = min(30, max(10, width / 4))
      var choice = (bar: wanted, speed: true, eta: true)
      if fixed(bar: choice.bar, speed: true, eta: true) + UIScreen.minimumName > width { choice.bar = 0 }
      if fixed(bar: 0, speed: true, eta: true) + UIScreen.minimumName > width { choice.eta = false }
      if fixed(bar: 0, speed: true, eta: false) + UIScreen.minimumName > width { choice.speed = false }
      bar = choice.bar
      speed = choice.speed
      eta = choice.eta
    }

    var header: String {
      line(
        name: "NAME", bar: String(repeating: " ", count: bar), percent: "", speed: "SPEED", eta: "ETA",
        state: "STATE", progressTitle: true)
    }

    func row(_ item: Item) -> String {
      let fraction: Double? =
        item.state == .complete
        ? 1 : item.totalBytes.map { $0 > 0 ? min(1, max(0, Double(item.bytes) / Double($0))) : 1 }
      let percent = fraction.map { String(Int(($0 * 100).rounded(.down))) + "%" } ?? "-"
      let barText =
        fraction.map { ProgressLine.bar(fraction: $0, width: bar) } ?? String(repeating: "·", count: bar)
      let active = item.state == .active && item.bytesPerSecond > 0
      let speedText = active ? ByteQuantity.formatRate(item.bytesPerSecond) : "-"
      var etaText = "-"
      if active, let total = item.totalBytes {
        etaText = ProgressLine.formatETA(Double(max(0, total - item.bytes)) / item.bytesPerSecond)
      }
      return line(
        name: item.name, bar: barText, percent: percent, speed: speedText, eta: etaText,
        state: item.state.rawValue, progressTitle: false)
    }

    private func line(
      name: String, bar barText: String, percent: String, speed speedText: String, eta etaText: String,
      state: String, progressTitle: Bool
    ) -> String {
      var right = ""
      if progressTitle {
        let title = "PROGRESS"
        let span = (bar > 0 ? bar + 1 : 0) + Self.percent
        right += "  " + title + String(repeating: " ", count: max(0, span - title.count))
      } else {
        right += "  " + (bar > 0 ? barText + " " : "") + leftPad(percent, Self.percent)
      }
      if speed { right += "  " + leftPad(speedText, Self.speedWidth) }
      if eta { right += "  " + leftPad(etaText, Self.etaWidth) }
      right += "  " + state + String(repeating: " ", count: max(0, Self.stateWidth - state.count))
      let room = max(1, width - right.count)
      let shown = ProgressLine.truncate(name, to: room)
      return shown + String(repeating: " ", count: room - shown.count) + right
    }

    private func leftPad(_ text: String, _ width: Int) -> String {
      String(repeating: " ", count: max(0, width - text.count)) + text
    }
  }
}
