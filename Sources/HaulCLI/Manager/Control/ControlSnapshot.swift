import FoundationEssentials
import Haul
import HaulRPC

/// What `haul.snapshot` answers on the control socket: every download of the owner's catalog
/// (removed ones too, until forgotten) in queue order with its live numbers, and the statistics,
/// taken at one moment (`DownloadManager.snapshot()`). `haul ui` attached to an owner shows it.
///
/// ```json
/// {"downloads": [{"id": "2089b05ecca3d829", "url": "https://…/a.iso", "file": "/home/me/a.iso",
///   "state": "active", "bytes": 1048576, "totalBytes": 4194304, "bytesPerSecond": 52428.8,
///   "connections": 1, "rateLimit": null, "queueIndex": null, "error": null, "needsCredentials": false}],
///  "statistics": {"active": 1, "waiting": 0, "stopped": 0, "bytesPerSecond": 52428.8,
///   "maxConcurrent": 4, "overallRateLimit": null}}
/// ```
struct ControlSnapshot: Equatable, Sendable {
  struct Download: Equatable, Sendable {
    var id: DownloadID
    /// Without the password of its userinfo.
    var url: String
    /// The file it produces, once known.
    var file: String?
    var state: DownloadState
    var bytes: Int64
    var totalBytes: Int64?
    /// Receive speed while active (0 otherwise).
    var bytesPerSecond: Double
    var connections: Int
    /// Its own rate limit (nil: none).
    var rateLimit: Int64? = nil
    var queueIndex: Int?
    var error: HaulError?
    var needsCredentials: Bool
    /// The name its file takes unless the server names it (`DownloadSnapshot.fallbackFileName`).
    var fallbackFileName: String? = nil
  }

  var downloads: [Download]
  var active: Int
  /// Queued and paused.
  var waiting: Int
  /// Complete, failed and removed.
  var stopped: Int
  var bytesPerSecond: Double
  var maxConcurrent: Int
  var overallRateLimit: Int64?

  init(
    downloads: [Download], active: Int, waiting: Int, stopped: Int, bytesPerSecond: Double,
    maxConcurrent: Int, overallRateLimit: Int64?
  ) {
    self.downloads = downloads
    self.active = active
    self.waiting = waiting
    self.stopped = stopped
    self.bytesPerSecond = bytesPerSecond
    self.maxConcurrent = maxConcurrent
    self.overallRateLimit = overallRateLimit
  }

  init(_ snapshot: ManagerSnapshot) {
    let statistics = snapshot.statistics
    self.init(
      downloads: snapshot.downloads.map { download in
        Download(
          id: download.id, url: download.url, file: download.file?.path, state: download.state,
          bytes: download.bytes, totalBytes: download.totalBytes, bytesPerSecond: download.bytesPerSecond,
          connections: download.connections, rateLimit: download.rateLimit, queueIndex: download.queueIndex,
          error: download.error,
          needsCredentials: download.needsCredentials, fallbackFileName: download.fallbackFileName)
      }, active: statistics.active, waiting: statistics.waiting, stopped: statistics.stopped,
      bytesPerSecond: statistics.bytesPerSecond, maxConcurrent: statistics.maxConcurrentDownloads,
      overallRateLimit: statistics.overallRateLimit)
  }

  var json: JSONValue {
    func optional(_ value: Int64?) -> JSONValue { value.map(JSONValue.integer) ?? .null }
    let downloads = downloads.map { download -> JSONValue in
      [
        "id": .string(download.id.description), "url": .string(download.url),
        "file": download.file.map(JSONValue.string) ?? .null, "state": .string(download.state.rawValue),
        "bytes": .integer(download.bytes), "totalBytes": optional(download.totalBytes),
        "bytesPerSecond": .double(download.bytesPerSecond),
        "connections": .integer(Int64(download.connections)),
        "rateLimit": optional(download.rateLimit),
        "queueIndex": optional(download.queueIndex.map(Int64.init)),
        "error": download.error.map(ControlCoding.json) ?? .null,
        "needsCredentials": .bool(download.needsCredentials),
        "fallbackFileName": download.fallbackFileName.map(JSONValue.string) ?? .null,
      ]
    }
    return [
      "downloads": .array(downloads),
      "statistics": [
        "active": .integer(Int64(active)), "waiting": .integer(Int64(waiting)),
        "stopped": .integer(Int64(stopped)), "bytesPerSecond": .double(bytesPerSecond),
        "maxConcurrent": .integer(Int64(maxConcurrent)), "overallRateLimit": optional(overallRateLimit),
      ],
    ]
  }

  /// - Throws: `.generic` when `json` is not a snapshot (an owner that answers otherwise).
  init(json: JSONValue) throws(HaulError) {
    func malformed(_ what: String) -> HaulError {
      HaulError(.generic, "the catalog's owner answered \(ControlMethods.snapshot) without \(what)")
    }
    func number(_ value: JSONValue?) -> Double? {
      switch value {
      case .integer(let integer)?: Double(integer)
      case .double(let double)?: double
      default: nil
      }
    }
    guard let list = json["downloads"]?.array, let statistics = json["statistics"]?.object else {
      throw malformed("its downloads and statistics")
    }
    var downloads: [Download] = []
    downloads.reserveCapacity(list.count)
    for value in list {
      guard let id = value["id"]?.string.flatMap(DownloadID.init), let url = value["url"]?.string,
        let state = value["state"]?.string.flatMap(DownloadState.init(rawValue:)),
        let bytes = value["bytes"]?.integer
      else { throw malformed("a download's id, url, state and bytes") }
      downloads.append(
        Download(
          id: id, url: url, file: value["file"]?.string, state: state, bytes: bytes,
          totalBytes: value["totalBytes"]?.integer, bytesPerSecond: number(value["bytesPerSecond"]) ?? 0,
          connections: Int(clamping: value["connections"]?.integer ?? 0),
          rateLimit: value["rateLimit"]?.integer,
          queueIndex: value["queueIndex"]?.integer.map { Int(clamping: $0) },
          error: value["error"].flatMap { $0 == .null ? nil : ControlCoding.error($0) },
          needsCredentials: value["needsCredentials"] == .bool(true),
          fallbackFileName: value["fallbackFileName"]?.string))
    }
    func count(_ key: String) -> Int { Int(clamping: statistics[key]?.integer ?? 0) }
    guard let limit = statistics["maxConcurrent"]?.integer else { throw malformed("its limit") }
    self.init(
      downloads: downloads, active: count("active"), waiting: count("waiting"), stopped: count("stopped"),
      bytesPerSecond: number(statistics["bytesPerSecond"]) ?? 0, maxConcurrent: Int(clamping: limit),
      overallRateLimit: statistics["overallRateLimit"]?.integer)
  }
}
