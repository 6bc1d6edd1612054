import FoundationEssentials

/// A download to add to a `DownloadManager`.
///
/// ```swift
/// var options = DownloadOptions()
/// options.connections = 4
/// let ids = try await manager.add([
///   DownloadRequest(url: "https://example.com/a.iso", to: .directory(downloads), options: options),
///   DownloadRequest(url: "https://example.com/b.iso", to: .file(downloads.appendingPathComponent("b.iso"))),
/// ])
/// ```
public struct DownloadRequest: Sendable {
  public var url: String
  public var destination: DownloadDestination
  /// Stored with the download; URL passwords and Authorization, Proxy-Authorization and Cookie
  /// header values are kept in memory only. `sharedRateLimit` is replaced by the manager's
  /// overall limit. `refreshURL` is kept in memory only: after a relaunch, give it again with
  /// `changeOptions(_:to:)`.
  public var options: DownloadOptions

  public init(url: String, to destination: DownloadDestination, options: DownloadOptions = DownloadOptions())
  {
    self.url = url
    self.destination = destination
    self.options = options
  }
}

/// One download as a manager lists it: from the catalog and the download's own state file at
/// launch (no network needed), then live while it runs.
public struct DownloadSnapshot: Sendable, Equatable, Identifiable {
  public let id: DownloadID
  /// The URL, without the password of its userinfo.
  public let url: String
  public let destination: DownloadDestination
  /// The file it produces, once known (at once for `.file`, from the first response for `.directory`).
  public let file: URL?
  /// For a `.directory` download, the name its file takes unless the server names it
  /// (`DownloadOptions.fallbackFileName`); nil when the URL's own name serves.
  public let fallbackFileName: String?
  public package(set) var state: DownloadState
  /// Bytes held (durable, or about to be while it runs).
  public let bytes: Int64
  /// The full size, when known.
  public let totalBytes: Int64?
  /// Receive speed while active, bytes per second (0 otherwise).
  public let bytesPerSecond: Double
  /// Open connections while active.
  public let connections: Int
  /// Its own rate limit, bytes per second (nil: none); the manager's overall limit applies too.
  public let rateLimit: Int64?
  /// Why it failed (state `.failed`), why it waits (`.paused` for credentials), or the error a
  /// pause or cancel overtook. A complete download whose file was deleted or changed since is
  /// listed as `.failed` with an error that says so.
  public package(set) var error: HaulError?
  /// Its place in the waiting queue (0 starts next) when queued or paused.
  public let queueIndex: Int?
  /// Set once it is complete.
  public let sha256: String?
  /// The URL after redirects, once known.
  public let finalURL: String?
  public let addedAt: Date
  public let finishedAt: Date?
  /// It needs a URL password or secret header this process was not given (after a relaunch):
  /// see `DownloadManager.changeURL(_:to:)` and `changeOptions(_:to:)`.
  public let needsCredentials: Bool

  /// 0...1 when the size is known.
  public var fraction: Double? {
    guard let totalBytes else { return state == .complete ? 1 : nil }
    return totalBytes > 0 ? Double(bytes) / Double(totalBytes) : 1
  }

  /// Seconds left at the current speed, when it can be told.
  public var secondsRemaining: Double? {
    guard let totalBytes, bytesPerSecond > 0 else { return nil }
    return Double(max(0, totalBytes - bytes)) / bytesPerSecond
  }

  package init(
    record: DownloadRecord, live: LiveProgress?, queueIndex: Int?, needsCredentials: Bool,
    state: DownloadState? = nil, error: HaulError? = nil
  ) {
    id = record.id
    url = record.url
    destination = record.destination
    file = (live?.file ?? record.file).map { URL(fileURLWithPath: $0) }
    fallbackFileName = record.options.fallbackFileName
    self.state = state ?? record.state
    bytes = live?.bytes ?? record.bytes
    totalBytes = live?.totalBytes ?? record.totalBytes
    bytesPerSecond = live?.bytesPerSecond ?? 0
    connections = live?.connections ?? 0
    rateLimit = record.options.rateLimit
    self.error = error ?? record.error?.haulError
    self.queueIndex = queueIndex
    sha256 = record.sha256
    finalURL = record.finalURL
    addedAt = Date(timeIntervalSince1970: record.addedAt)
    finishedAt = record.finishedAt.map { Date(timeIntervalSince1970: $0) }
    self.needsCredentials = needsCredentials
  }
}

/// Counts and speed over all downloads (aria2's `getGlobalStat`).
public struct ManagerStatistics: Sendable, Equatable {
  /// Sum of the active downloads' speeds, bytes per second.
  public let bytesPerSecond: Double
  public let active: Int
  /// Queued and paused.
  public let waiting: Int
  /// Complete, failed and removed (until forgotten).
  public let stopped: Int
  public let maxConcurrentDownloads: Int
  /// The overall limit, bytes per second, or nil for none.
  public let overallRateLimit: Int64?

  package init(
    bytesPerSecond: Double, active: Int, waiting: Int, stopped: Int, maxConcurrentDownloads: Int,
    overallRateLimit: Int64?
  ) {
    self.bytesPerSecond = bytesPerSecond
    self.active = active
    self.waiting = waiting
    self.stopped = stopped
    self.maxConcurrentDownloads = maxConcurrentDownloads
    self.overallRateLimit = overallRateLimit
  }
}

/// Everything a polling UI shows, taken at one moment.
public struct ManagerSnapshot: Sendable, Equatable {
  /// Every download in queue order.
  public let downloads: [DownloadSnapshot]
  public let statistics: ManagerStatistics

  package init(downloads: [DownloadSnapshot], statistics: ManagerStatistics) {
    self.downloads = downloads
    self.statistics = statistics
  }
}

/// Something that happened in a manager. Subscribe with `DownloadManager.events()`; every
/// subscriber gets every event, in order for each download.
public enum DownloadManagerEvent: Sendable {
  case added(DownloadSnapshot)
  /// Waits for a slot again (resumed, retried, or restarting after an option change).
  case queued(DownloadID)
  /// It became active: a run began (aria2's onDownloadStart).
  case started(DownloadID)
  /// The server answered: the file, the bytes resumed from and the size are known.
  case responded(DownloadID, DownloadStart)
  case progress(DownloadID, DownloadProgress)
  case retrying(DownloadID, RetryNotice)
  /// The server's copy changed or it ignores ranges: starting over from byte 0.
  case restarted(DownloadID, reason: String)
  case paused(DownloadID)
  case completed(DownloadID, DownloadResult)
  case failed(DownloadID, HaulError)
  /// Cancelled (aria2's onDownloadStop); listed as `.removed` until forgotten.
  case removed(DownloadID)
  /// Taken off the catalog.
  case forgotten(DownloadID)
  /// Its position, options or URL changed.
  case changed(DownloadID)

  public var id: DownloadID {
    switch self {
    case .added(let snapshot): snapshot.id
    case .queued(let id), .started(let id), .responded(let id, _), .progress(let id, _), .retrying(let id, _),
      .restarted(let id, _), .paused(let id), .completed(let id, _), .failed(let id, _), .removed(let id),
      .forgotten(let id), .changed(let id):
      id
    }
  }
}

/// A running download's latest numbers.
package struct LiveProgress: Sendable, Equatable {
  package var bytes: Int64
  package var totalBytes: Int64?
  package var bytesPerSecond: Double = 0
  package var connections: Int = 0
  package var file: String?

  package init(
    bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double = 0, connections: Int = 0, file: String? = nil
  ) {
    self.bytes = bytes
    self.totalBytes = totalBytes
    self.bytesPerSecond = bytesPerSecond
    self.connections = connections
    self.file = file
  }
}
