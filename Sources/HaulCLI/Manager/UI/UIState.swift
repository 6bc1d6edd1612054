import Haul

/// What `haul ui` shows besides the downloads, and what a key does: the selection (by id, so it
/// follows its download when the queue changes), the scroll position, a prompt or confirmation,
/// the last message. Pure: `handle` returns the commands to carry out; the caller runs them on
/// the manager and reports back with `report`.
///
///     var state = UIState()
///     state.handle(.character("p"), rows: rows, visibleRows: 20)  // [.pause(selected)]
struct UIState: Equatable {
  enum Mode: Equatable {
    case browsing
    /// "Remove NAME? y/n".
    case confirmingRemoval(DownloadID, name: String)
    /// The add prompt and what was typed so far.
    case adding(String)
    /// The rate limit prompt and what was typed so far.
    case limiting(LimitTarget, String)
  }

  /// Whose rate limit the prompt sets.
  enum LimitTarget: Equatable {
    case download(DownloadID, name: String)
    /// The manager's limit over all downloads.
    case overall
  }

  /// A command for the manager.
  enum Command: Equatable {
    case pause(DownloadID)
    case resume(DownloadID)
    case cancel(DownloadID)
    case remove(DownloadID)
    case add(url: String)
    /// Change the limit on concurrent downloads by this much (at least 1 stays).
    case changeConcurrency(by: Int)
    /// Set a download's own rate limit (nil lifts it).
    case limitRate(DownloadID, Int64?)
    /// Set the overall rate limit (nil lifts it).
    case limitOverallRate(Int64?)
    /// Leave, everything saved; `interrupted` for Ctrl-C.
    case quit(interrupted: Bool)
    /// Ctrl-Z: stop the process as SIGTSTP does, the terminal put back until it continues.
    case suspend
  }

  /// One download as the keys see it.
  struct Row: Equatable {
    var id: DownloadID
    var name: String
  }

  private(set) var mode = Mode.browsing
  private(set) var selected: DownloadID?
  /// Index of the first row shown.
  private(set) var top = 0
  /// The outcome of the last command, or help on what to do.
  private(set) var message: String?

  static let longestURL = 8192

  /// Where the selection was when last fitted: the place it keeps when its download goes.
  private var place = 0

  /// The selection's index among `rows`; when its download is gone, the row now at its place
  /// (the one after it, or the last), as a list does after a deletion.
  func selectedIndex(in rows: [Row]) -> Int? {
    guard !rows.isEmpty else { return nil }
    return selected.flatMap { id in rows.firstIndex { $0.id == id } } ?? min(place, rows.count - 1)
  }

  /// Keeps the selection on an existing row and in view of `visibleRows` rows.
  mutating func fit(rows: [Row], visibleRows: Int) {
    guard let index = selectedIndex(in: rows) else {
      selected = nil
      top = 0
      return
    }
    selected = rows[index].id
    place = index
    let visible = max(1, visibleRows)
    if index < top { top = index }
    if index >= top + visible { top = index - visible + 1 }
    top = min(top, max(0, rows.count - visible))
    top = max(0, top)
  }

  mutating func handle(_ key: UIKey, rows: [Row], visibleRows: Int) -> [Command] {
    if key == .interrupt { return [.quit(interrupted: true)] }
    // Whatever is being typed or asked stays, to go on with after fg.
    if key == .suspend { return [.suspend] }
    switch mode {
    case .browsing: return browse(key, rows: rows, visibleRows: visibleRows)
    case .confirmingRemoval(let id, _):
      mode = .browsing
      if key == .character("y") || key == .character("Y") { return [.remove(id)] }
      message = "nothing removed"
      return []
    case .adding(let text):
      guard let url = edit(key, text, editing: { .adding($0) }, cancelled: "nothing added") else { return [] }
      return [.add(url: url)]
    case .limiting(let target, let text):
      guard let typed = edit(key, text, editing: { .limiting(target, $0) }, cancelled: "no limit changed")
      else { return [] }
      return limit(target, typed)
    }
  }

  /// What a command did: nil for success with nothing to say.
  mutating func report(_ text: String?) { message = text }

  private mutating func browse(_ key: UIKey, rows: [Row], visibleRows: Int) -> [Command] {
    let index = selectedIndex(in: rows)
    let page = max(1, visibleRows - 1)
    func move(to target: Int) {
      guard !rows.isEmpty else { return }
      selected = rows[min(rows.count - 1, max(0, target))].id
      fit(rows: rows, visibleRows: visibleRows)
    }
    switch key {
    case .up, .character("k"): move(to: (index ?? 0) - 1)
    case .down, .character("j"): move(to: (index ?? 0) + 1)
    case .pageUp: move(to: (index ?? 0) - page)
    case .pageDown: move(to: (index ?? 0) + page)
    case .home, .character("g"): move(to: 0)
    case .end, .character("G"): move(to: rows.count - 1)
    case .character("q"): return [.quit(interrupted: false)]
    case .character("+"), .character("a"):
      mode = .adding("")
      message = nil
    case .character("<"), .character("-"): return [.changeConcurrency(by: -1)]
    case .character(">"), .character("="): return [.changeConcurrency(by: 1)]
    case .character("L"):
      mode = .limiting(.overall, "")
      message = nil
    case .character("p"), .character("r"), .character("c"), .character("d"), .delete, .character("l"):
      guard let index else {
        message = "no download selected: + adds one"
        return []
      }
      let row = rows[index]
      message = nil
      switch key {
      case .character("p"): return [.pause(row.id)]
      case .character("r"): return [.resume(row.id)]
      case .character("c"): return [.cancel(row.id)]
      case .character("l"): mode = .limiting(.download(row.id, name: row.name), "")
      default: mode = .confirmingRemoval(row.id, name: row.name)
      }
    default: break
    }
    return []
  }

  /// A key on a line being typed: the trimmed text when Enter ends it (and it is not empty);
  /// Esc or an empty line leaves with `cancelled`.
  private mutating func edit(_ key: UIKey, _ text: String, editing: (String) -> Mode, cancelled: String)
    -> String?
  {
    switch key {
    case .escape:
      mode = .browsing
      message = cancelled
    case .enter:
      mode = .browsing
      let typed = text.trimmingWhitespace()
      guard !typed.isEmpty else {
        message = cancelled
        return nil
      }
      return typed
    case .backspace:
      mode = editing(String(text.dropLast()))
    case .character(let character) where text.utf8.count < Self.longestURL:
      mode = editing(text + String(character))
    default: break
    }
    return nil
  }

  /// What a typed rate sets: `500K`, `2M` (as `--limit-rate`); `0` or `none` lifts the limit.
  private mutating func limit(_ target: LimitTarget, _ typed: String) -> [Command] {
    let rate: Int64?
    if typed == "0" || typed.lowercased() == "none" {
      rate = nil
    } else if let parsed = CommandLineOptions.parseRate(typed) {
      rate = parsed
    } else {
      message = "'\(typed)' is not a rate (500K, 2M; 0 lifts the limit): no limit changed"
      return []
    }
    switch target {
    case .download(let id, _): return [.limitRate(id, rate)]
    case .overall: return [.limitOverallRate(rate)]
    }
  }
}
