import FoundationEssentials
import Haul
import HaulRPC

/// A download as aria2 describes it (`tellStatus`, `tellActive` …, `getFiles`, `getUris`):
/// numbers as decimal strings, aria2's status names and error codes, one file with one URI.
enum Aria2Status {
  /// aria2's piece size for HTTP downloads; `pieceLength` and `numPieces` report it.
  static let pieceLength: Int64 = 1 << 20

  static func status(_ download: DownloadSnapshot) -> String {
    switch download.state {
    case .queued: "waiting"
    case .active: "active"
    case .paused: "paused"
    case .complete: "complete"
    case .failed: "error"
    case .removed: "removed"
    }
  }

  /// The keys of `tellStatus` in aria2's order, the stopped ones' (with errorCode and
  /// errorMessage) or the others'; `keys` keeps only those asked for (all when empty).
  static func entry(_ download: DownloadSnapshot, keys: [String] = []) -> JSONValue {
    let stopped = download.state.isStopped
    var all: [(String, JSONValue)] = []
    let total = download.totalBytes ?? 0
    let pieces = total == 0 ? 0 : (total + pieceLength - 1) / pieceLength
    if stopped {
      all = [
        ("gid", .string(download.id.description)), ("errorCode", .string(errorCode(download))),
        ("errorMessage", .string(download.state == .failed ? download.error?.message ?? "" : "")),
        ("status", .string(status(download))), ("files", files(download)),
        ("totalLength", .string(String(total))), ("completedLength", .string(String(download.bytes))),
        ("uploadLength", "0"), ("downloadSpeed", "0"), ("uploadSpeed", "0"),
        ("pieceLength", .string(String(pieceLength))), ("numPieces", .string(String(pieces))),
        ("connections", "0"), ("dir", .string(directory(download))),
      ]
    } else {
      all = [
        ("status", .string(status(download))), ("gid", .string(download.id.description)),
        ("totalLength", .string(String(total))), ("completedLength", .string(String(download.bytes))),
        ("downloadSpeed", .string(String(Int64(download.bytesPerSecond.rounded(.down))))),
        ("uploadSpeed", "0"),
        ("uploadLength", "0"), ("connections", .string(String(download.connections))),
        ("pieceLength", .string(String(pieceLength))), ("numPieces", .string(String(pieces))),
        ("files", files(download)), ("dir", .string(directory(download))),
      ]
    }
    return .object(JSONObject(keys.isEmpty ? all : all.filter { keys.contains($0.0) }))
  }

  /// `getFiles`: the one file of a download.
  static func files(_ download: DownloadSnapshot) -> JSONValue {
    [
      [
        "index": "1", "path": .string(path(download)), "length": .string(String(download.totalBytes ?? 0)),
        "completedLength": .string(String(download.bytes)), "selected": "true", "uris": uris(download),
      ]
    ]
  }

  /// `getUris`: the download's URL (Haul fetches a file from one URL), "used" once it has been
  /// fetched from, "waiting" before, as aria2 marks a queued or paused download's never tried.
  static func uris(_ download: DownloadSnapshot) -> JSONValue {
    [["uri": .string(download.url), "status": hasStarted(download) ? "used" : "waiting"]]
  }

  /// Whether the download has ever reached its server: a waiting one without bytes or a known
  /// size has not.
  static func hasStarted(_ download: DownloadSnapshot) -> Bool {
    switch download.state {
    case .queued, .paused: download.bytes > 0 || download.totalBytes != nil || download.finalURL != nil
    case .active, .complete, .failed, .removed: true
    }
  }

  /// `getServers` for an active download: the URL it fetches from, where redirects led, the speed.
  static func servers(_ download: DownloadSnapshot) -> JSONValue {
    [
      [
        "index": "1",
        "servers": [
          [
            "uri": .string(download.url), "currentUri": .string(download.finalURL ?? download.url),
            "downloadSpeed": .string(String(Int64(download.bytesPerSecond.rounded(.down)))),
          ]
        ],
      ]
    ]
  }

  /// The file's path, or "" while the server has not named it yet (as aria2).
  static func path(_ download: DownloadSnapshot) -> String {
    if let file = download.file { return file.path }
    if case .file(let file) = download.destination { return file.path }
    return ""
  }

  static func directory(_ download: DownloadSnapshot) -> String {
    switch download.destination {
    case .directory(let directory): directory.path
    case .file(let file): file.deletingLastPathComponent().path
    }
  }

  /// aria2's exit code for how a stopped download ended: 0 complete, 31 removed, else the
  /// closest of aria2's codes to the failure's category.
  static func errorCode(_ download: DownloadSnapshot) -> String {
    errorCode(state: download.state, error: download.error)
  }

  static func errorCode(state: DownloadState, error: HaulError?) -> String {
    switch state {
    case .complete: return "0"
    case .removed: return "31"
    case .failed: break
    default: return "0"
    }
    guard let error else { return "1" }
    switch error.category {
    case .network: return "6"
    case .authentication: return "24"
    case .protocol: return "22"
    case .server: return error.message.contains("404") ? "3" : error.message.contains("503") ? "29" : "22"
    case .integrity: return "32"
    // 13: the file already existed; 9: not enough disk space (known before the first byte, or
    // a write the disk or quota refused); 17: any other I/O error. By the cause the engine
    // gave, not by the words of its message.
    case .fileSystem:
      if error.underlying is TargetExists { return "13" }
      if error.underlying is InsufficientSpace { return "9" }
      if let system = error.underlying as? SystemError, SystemError.meansNoSpace(system.errno) { return "9" }
      return "17"
    case .invalidInput: return "28"
    case .interrupted: return "7"
    default: return "1"
    }
  }

  /// aria2's pagination of `tellWaiting`/`tellStopped`: a negative offset counts from the end
  /// and lists backwards.
  static func page<T>(_ items: [T], offset: Int64, count: Int64) -> [T] {
    guard count > 0 else { return [] }
    let size = Int64(items.count)
    var start = offset
    var take = count
    if offset < 0 {
      let last = offset + size
      guard last >= 0 else { return [] }
      start = last - (count - 1)
      if start < 0 {
        start = 0
        take = last + 1
      }
    } else if size <= offset {
      return []
    }
    let end = min(size, start + take)
    let slice = Array(items[Int(start)..<Int(end)])
    return offset < 0 ? slice.reversed() : slice
  }
}
