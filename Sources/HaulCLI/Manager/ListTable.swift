import FoundationEssentials
import Haul

/// `haul ls`'s lines: a table fitted to the terminal, or one JSON object per download. Pure:
/// the same download gives the same text.
///
/// ```
/// ID                STATE     DONE                 SIZE       SPEED  NAME
/// 2089b05ecca3d829  active     42%  1.21 GiB / 2.87 GiB  48.3 MiB/s  ubuntu.iso
/// 7c1e0d9a4f3b2e61  paused      8%   82.0 MiB / 1.00 GiB           -  debian.iso
/// ```
struct ListTable {
  /// The terminal's width, or nil for no limit (output to a file or pipe).
  let width: Int?

  /// The columns shown, in order; narrow terminals lose the speed, then the size.
  enum Column: CaseIterable {
    case id, state, done, size, speed, name

    var title: String {
      switch self {
      case .id: "ID"
      case .state: "STATE"
      case .done: "DONE"
      case .size: "SIZE"
      case .speed: "SPEED"
      case .name: "NAME"
      }
    }

    /// Columns taken (the name takes the rest).
    var width: Int {
      switch self {
      case .id: 16
      case .state: 8
      case .done: 4
      case .size: 19
      case .speed: 10
      case .name: 0
      }
    }

    var rightAligned: Bool { self == .done || self == .size || self == .speed }
  }

  static let separator = "  "
  /// The least room left for names before columns are dropped.
  static let minimumName = 12

  var columns: [Column] {
    var columns = Column.allCases
    guard let width else { return columns }
    for dropped in [Column.speed, .size] {
      guard fixedWidth(columns) + Self.minimumName > width - 1 else { break }
      columns.removeAll { $0 == dropped }
    }
    return columns
  }

  private func fixedWidth(_ columns: [Column]) -> Int {
    columns.filter { $0 != .name }.reduce(0) { $0 + $1.width + Self.separator.count }
  }

  var header: String { line(Column.allCases.map { ($0, $0.title) }) }

  /// What a row shows, from a catalog's download or a fleet queue's job.
  struct Item: Equatable {
    var id: String
    var state: String
    var bytes: Int64
    var totalBytes: Int64?
    var complete: Bool
    /// Bytes per second, shown for running ones.
    var speed: Double?
    var name: String
  }

  func row(_ item: Item) -> String {
    line(Column.allCases.map { ($0, cell($0, item)) })
  }

  /// The row of `download`; `speed` is the owner's live speed of an active one, when known.
  func row(_ download: DownloadSnapshot, speed: Double? = nil) -> String {
    let rate = speed ?? download.bytesPerSecond
    return row(
      Item(
        id: download.id.description, state: download.state.rawValue, bytes: download.bytes,
        totalBytes: download.totalBytes, complete: download.state == .complete,
        speed: download.state == .active && rate > 0 ? rate : nil, name: Self.label(of: download)))
  }

  private func cell(_ column: Column, _ item: Item) -> String {
    switch column {
    case .id: return item.id
    case .state: return item.state
    case .done:
      if item.complete { return "100%" }
      guard let total = item.totalBytes else { return "-" }
      let fraction = total > 0 ? Double(item.bytes) / Double(total) : 1
      return String(Int((min(1, max(0, fraction)) * 100).rounded(.down))) + "%"
    case .size:
      if let total = item.totalBytes {
        return item.complete
          ? ByteQuantity.format(total) : ByteQuantity.format(item.bytes) + " / " + ByteQuantity.format(total)
      }
      return item.bytes > 0 ? ByteQuantity.format(item.bytes) : "-"
    case .speed:
      return item.speed.map(ByteQuantity.formatRate) ?? "-"
    case .name:
      return item.name
    }
  }

  private func line(_ cells: [(Column, String)]) -> String {
    let shown = columns
    var text = ""
    for (column, value) in cells where shown.contains(column) {
      if !text.isEmpty { text += Self.separator }
      if column == .name {
        guard let width else {
          text += value
          continue
        }
        text += ProgressLine.truncate(value, to: max(1, width - 1 - text.count))
      } else {
        let padding = String(repeating: " ", count: max(0, column.width - value.count))
        text += column.rightAligned ? padding + value : value + padding
      }
    }
    return text
  }

  /// What a download is called: its file's name once known, else the name it takes unless the
  /// server names it (`--auto-rename`'s numbered one), else the URL's last segment.
  static func name(of download: DownloadSnapshot) -> String {
    name(file: download.file?.lastPathComponent ?? download.fallbackFileName, url: download.url)
  }

  static func name(file: String?, url: String) -> String {
    if let file, !file.isEmpty { return ProgressLine.sanitize(file) }
    let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    let parts = path.split(separator: "/", omittingEmptySubsequences: true)
    // `https://host/dir/name`: the name; `https://host/` or `https://host/dir/`: the URL itself.
    guard parts.count > 2, !path.hasSuffix("/"), let last = parts.last else {
      return ProgressLine.sanitize(url)
    }
    return ProgressLine.sanitize(String(last))
  }

  /// The name column: the name, and why a failed or waiting download stopped.
  static func label(of download: DownloadSnapshot) -> String {
    let name = name(of: download)
    if download.needsCredentials { return name + " (needs its credentials again)" }
    if download.state == .failed, let error = download.error {
      return name + ": " + ProgressLine.sanitize(error.message)
    }
    return name
  }

  /// The download as one line of JSON (`haul ls --json`).
  static func json(_ download: DownloadSnapshot, speed: Double? = nil) -> String {
    let error = download.error.map(CommandWording.manager(download.id).translate)
    return JSONEventLine.object([
      ("id", .string(download.id.description)),
      ("state", .string(download.state.rawValue)),
      ("bytes", .int(download.bytes)),
      ("total", .optional(download.totalBytes)),
      ("fraction", .optional(download.fraction.map { JSONEventLine.rounded($0, places: 4) })),
      ("bytes_per_second", .double(JSONEventLine.rounded(speed ?? download.bytesPerSecond, places: 1))),
      // The download's own limit; the overall one is the owner's (`haul ui` shows it).
      ("rate_limit", .optional(download.rateLimit)),
      ("file", .optional(download.file?.path)),
      ("url", .string(download.url)),
      ("error", .optional(error?.message)),
      ("error_category", .optional(error.map { JSONEventLine.categoryName($0.category) })),
      ("hint", .optional(error?.hint)),
      ("queue_index", .optional(download.queueIndex.map(Int64.init))),
      ("needs_credentials", .bool(download.needsCredentials)),
      ("sha256", .optional(download.sha256)),
      ("added_at", .double(JSONEventLine.rounded(download.addedAt.timeIntervalSince1970, places: 3))),
      (
        "finished_at",
        .optional(download.finishedAt.map { JSONEventLine.rounded($0.timeIntervalSince1970, places: 3) })
      ),
    ])
  }
}
