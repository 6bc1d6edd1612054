import FoundationEssentials

/// A persistent list of downloads that survives launches, crashes and reboots: the app's
/// download screen, or `haul add` / `haul run` / the daemon.
///
/// ```swift
/// let manager = try DownloadManager(catalog: appSupport.appendingPathComponent("downloads.sqlite"))
/// for download in manager.downloads() {          // at launch, before any network use
///   print(download.id, download.state, download.fraction ?? 0, download.file?.path ?? download.url)
/// }
/// let events = manager.events()
/// let id = try await manager.add("https://example.com/big.iso", to: .directory(downloads))
/// try await manager.pause(id)
/// try await manager.resume(id)
/// for await event in events {
///   if case .completed(id, let result) = event { print("saved", result.file.path); break }
/// }
/// await manager.close()
/// ```
///
/// The catalog is an SQLite file (WAL, synced on every change: an added download survives a
/// kill -9 or a power cut); bytes live in each download's `.part` and state files, so progress
/// is as durable as the engine makes it. One process owns a catalog at a time: a second
/// manager on it gets a `HaulError` that names the owner's pid.
///
/// **Credentials.** The catalog never stores a URL's password or the values of Authorization,
/// Proxy-Authorization and Cookie headers: they are kept in memory. After a relaunch such a
/// download waits, paused, with `needsCredentials` set and an error that says so, until given
/// them again with `changeURL(_:to:)` or `changeOptions(_:to:)`; then it continues. A proxy
/// URL's password (`NetworkOptions.proxy`), like `NetworkOptions.password` and `cookies`, is
/// not stored either: after a relaunch the download runs without it until given it again.
///
/// All methods may be called from any thread. Changes (`add`, `pause` …) are `async`: each is
/// committed to the catalog before it returns, or throws and changes nothing. Listing
/// (`downloads()`, `snapshot()`) reads memory and returns at once.
public final class DownloadManager: Sendable {
  /// How a manager runs.
  public struct Configuration: Sendable {
    /// Downloads running at once (at least 1). aria2's `max-concurrent-downloads`.
    public var maxConcurrentDownloads = 4
    /// A cap over all downloads, bytes per second, or nil. aria2's `max-overall-download-limit`.
    public var overallRateLimit: Int64?
    /// What happens at launch to downloads that were running or queued.
    public var launch = LaunchPolicy.resume
    /// Events each subscriber may fall behind by before the oldest are dropped (poll
    /// `snapshot()` to catch up).
    public var eventBuffer = 16_384
    /// How often running downloads' bytes are written to the catalog for listing, seconds.
    public var progressRecordInterval: Double = 0.5

    public init() {}
  }

  /// The catalog file.
  public let catalog: URL
  let core: ManagerCore
  private let eventBuffer: Int
  /// The subscription made before the queue runs, for the first `events()` call: the launch's
  /// events happen before a caller can subscribe.
  private let launchEvents: Locked<AsyncStream<DownloadManagerEvent>?>

  /// Opens the catalog at `catalog` (creating it if there is none) and restores every download
  /// from it and from the downloads' own state files, without the network. Then, as
  /// `configuration.launch` says, the queue runs.
  ///
  /// - Throws: `HaulError` when another process (or another manager in this one) has the
  ///   catalog open (the message gives its pid); when the file is not a Haul catalog, is
  ///   corrupt or comes from a newer Haul (it is left as it was); when it cannot be read or
  ///   written.
  public convenience init(catalog: URL, configuration: Configuration = Configuration()) throws(HaulError) {
    let path = catalog.standardizedFileURL.path
    try self.init(
      catalog: SQLiteCatalog(path: path), at: URL(fileURLWithPath: path), configuration: configuration)
  }

  /// A manager on another catalog implementation (issue 15's shared queue).
  package init(
    catalog implementation: sending any DownloadCatalog, at location: URL, configuration: Configuration
  ) throws(HaulError) {
    try Self.validate(limit: configuration.maxConcurrentDownloads)
    try Self.validate(rate: configuration.overallRateLimit)
    // A NaN or infinite interval would trap in `Duration.seconds`.
    guard (0...86_400).contains(configuration.progressRecordInterval) else {
      throw HaulError(
        .invalidInput,
        "progressRecordInterval must be between 0 and 86400 seconds (asked for \(configuration.progressRecordInterval))"
      )
    }
    catalog = location
    eventBuffer = configuration.eventBuffer
    core = try ManagerCore(
      catalog: implementation, limit: configuration.maxConcurrentDownloads, policy: configuration.launch,
      overallRateLimit: configuration.overallRateLimit, progressInterval: configuration.progressRecordInterval
    )
    launchEvents = Locked(core.hub.subscribe(bufferingNewest: configuration.eventBuffer))
    Task.detached { [core] in await core.begin() }
  }

  // MARK: - Adding

  /// Adds one download; it starts when a slot is free (at once if `paused` is false and fewer
  /// than `maxConcurrentDownloads` run).
  ///
  /// - Parameters:
  ///   - position: where it goes in the waiting queue (default: the end).
  ///   - paused: added paused; `resume` or `start` runs it.
  /// - Returns: its id.
  /// - Throws: `HaulError` `.invalidInput` for a bad URL or options, or when an unfinished
  ///   download already targets the same file; `.fileSystem` when the directory does not exist
  ///   or the catalog cannot be written.
  @discardableResult
  public func add(
    _ url: String, to destination: DownloadDestination, options: DownloadOptions = DownloadOptions(),
    at position: QueuePosition = .end, paused: Bool = false
  ) async throws(HaulError) -> DownloadID {
    let ids = try await add(
      [DownloadRequest(url: url, to: destination, options: options)], at: position, paused: paused)
    return ids[0]
  }

  /// Adds many downloads in one transaction, in order, all or none.
  @discardableResult
  public func add(
    _ requests: [DownloadRequest], at position: QueuePosition = .end, paused: Bool = false
  ) async throws(HaulError) -> [DownloadID] {
    let prepared = try ManagerInput.prepare(requests, now: Date().timeIntervalSince1970)
    return try await core.perform(
      { (shared) throws(HaulError) in
        // A loop, not a closure capturing the generator: ThreadSanitizer faults on the
        // address of a captured empty value (the system generator has no state).
        var generator = SystemRandomNumberGenerator()
        var ids: Set<DownloadID> = []
        var records: [DownloadRecord] = []
        for item in prepared {
          var record = item.record
          repeat {
            record.id = DownloadID.random(using: &generator)
          } while shared.machine.records[record.id] != nil || !ids.insert(record.id).inserted
          records.append(record)
        }
        return (try shared.machine.add(records, at: position, paused: paused), records.map(\.id))
      },
      committed: { shared, ids in
        for (id, item) in zip(ids, prepared) {
          if item.secrets != nil { shared.secrets[id] = item.secrets }
          if let refresh = item.refreshURL { shared.refreshers[id] = refresh }
        }
      })
  }

  // MARK: - Listing

  /// Every download in queue order, as it stands now (from memory: no I/O but a `stat` of
  /// each complete download's file, which is listed as `.failed` when it was deleted or changed).
  public func downloads() -> [DownloadSnapshot] {
    var downloads = core.shared.withLock { $0.snapshots() }
    for index in downloads.indices { downloads[index].checkFinishedFile() }
    return downloads
  }

  /// One download, or nil for an unknown id.
  public func download(_ id: DownloadID) -> DownloadSnapshot? {
    var snapshot = core.shared.withLock { $0.snapshot(id, queueIndex: $0.machine.waitingIndex(of: id)) }
    snapshot?.checkFinishedFile()
    return snapshot
  }

  /// Counts and speed over all downloads (aria2's `getGlobalStat`).
  public var statistics: ManagerStatistics {
    let limit = overallRateLimit
    return core.shared.withLock { shared in
      var speed = 0.0
      var counts: [DownloadState: Int] = [:]
      for record in shared.machine.records.values {
        counts[record.state, default: 0] += 1
        speed += shared.live[record.id]?.bytesPerSecond ?? 0
      }
      return ManagerStatistics(
        bytesPerSecond: speed, active: counts[.active, default: 0],
        waiting: counts[.queued, default: 0] + counts[.paused, default: 0],
        stopped: counts[.complete, default: 0] + counts[.failed, default: 0] + counts[.removed, default: 0],
        maxConcurrentDownloads: shared.machine.limit, overallRateLimit: limit)
    }
  }

  /// Every download and the statistics at one moment, for a UI that polls.
  public func snapshot() -> ManagerSnapshot {
    let limit = overallRateLimit
    let (downloads, speed, maximum) = core.shared.withLock { shared in
      (shared.snapshots(), shared.live.values.reduce(0) { $0 + $1.bytesPerSecond }, shared.machine.limit)
    }
    var checked = downloads
    for index in checked.indices { checked[index].checkFinishedFile() }
    let active = checked.count { $0.state == .active }
    let waiting = checked.count { $0.state.isWaiting }
    let statistics = ManagerStatistics(
      bytesPerSecond: speed, active: active, waiting: waiting, stopped: checked.count - active - waiting,
      maxConcurrentDownloads: maximum, overallRateLimit: limit)
    return ManagerSnapshot(downloads: checked, statistics: statistics)
  }

  // MARK: - Events and lifetime

  /// A new subscription to every download's events. Subscribe as many times as there are
  /// consumers (a UI, a log, an RPC server's notifications); each gets all events. The first
  /// subscription began when the manager was created, so it also gets the launch's events (the
  /// downloads that started, or finished, before it was asked for; until then it keeps up to
  /// `Configuration.eventBuffer` of them); later ones begin when they are made. The stream ends
  /// when the manager closes. A subscriber that falls `Configuration.eventBuffer` events behind
  /// loses the oldest.
  public func events() -> AsyncStream<DownloadManagerEvent> {
    launchEvents.withLock { $0.take() } ?? core.hub.subscribe(bufferingNewest: eventBuffer)
  }

  /// Returns when nothing runs and nothing will start by itself: every download is finished,
  /// paused, or (with `LaunchPolicy.hold`) left queued. What `haul run` waits for.
  public func waitUntilIdle() async {
    await core.idle()
  }

  /// Stops every running download (keeping their bytes; they continue at the next launch),
  /// writes the last numbers, closes the catalog and releases it for another process, and ends
  /// the event streams. Changes after this throw.
  public func close() async {
    await core.close()
  }
}
