import FoundationEssentials
import Haul
import HaulRPC

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What `haul ui` shows, taken at one moment: every download in the catalog, in queue order (a
/// cancelled one too, as `removed`, so that `r` can resume it as the message says), and the
/// numbers of the title.
struct UISnapshot: Equatable, Sendable {
  var items: [UIScreen.Item]
  var active: Int
  var bytesPerSecond: Double
  var maxConcurrent: Int
  var overallRateLimit: Int64? = nil
}

/// Where `haul ui` reads the downloads and sends what its keys do: the `DownloadManager` of this
/// process when it owns the catalog (`UILocalBackend`), or the process that owns it, through its
/// control socket (`UIOwnerBackend`: `haul run`, another `haul ui` or `haul daemon`).
protocol UIBackend: Sendable {
  /// The process that owns the catalog when it is another one (the title names it).
  var ownerProcess: pid_t? { get }
  /// Whether the backend can no longer answer: the owner has gone (its connection closed).
  var isGone: Bool { get }
  func snapshot() async throws(HaulError) -> UISnapshot
  func pause(_ id: DownloadID) async throws(HaulError)
  func resume(_ id: DownloadID) async throws(HaulError)
  func cancel(_ id: DownloadID) async throws(HaulError)
  func remove(_ id: DownloadID) async throws(HaulError)
  func add(_ request: DownloadRequest) async throws(HaulError) -> DownloadID
  /// The limit on downloads at once, and the overall rate limit (nil: none).
  func limits() async throws(HaulError) -> (maxConcurrent: Int, overallRateLimit: Int64?)
  /// Changes the limits given (nil: unchanged).
  func setLimits(maxConcurrent: Int?, overallRateLimit: Int64?) async throws(HaulError)
  /// Changes the overall rate limit (nil lifts it).
  func setOverallRateLimit(_ bytesPerSecond: Int64?) async throws(HaulError)
  /// Changes a download's own rate limit (nil lifts it), as it runs.
  func setRateLimit(_ bytesPerSecond: Int64?, of id: DownloadID) async throws(HaulError)
}

/// `haul ui` owns the catalog: its own manager.
struct UILocalBackend: UIBackend {
  let manager: DownloadManager

  var ownerProcess: pid_t? { nil }
  var isGone: Bool { false }

  func snapshot() async throws(HaulError) -> UISnapshot {
    let snapshot = manager.snapshot()
    let statistics = snapshot.statistics
    return UISnapshot(
      items: snapshot.downloads.map(UIScreen.Item.init),
      active: statistics.active, bytesPerSecond: statistics.bytesPerSecond,
      maxConcurrent: statistics.maxConcurrentDownloads, overallRateLimit: statistics.overallRateLimit)
  }

  func pause(_ id: DownloadID) async throws(HaulError) { try await manager.pause(id) }
  func resume(_ id: DownloadID) async throws(HaulError) { try await manager.resume(id) }
  func cancel(_ id: DownloadID) async throws(HaulError) { try await manager.cancel(id) }
  func remove(_ id: DownloadID) async throws(HaulError) { try await manager.remove(id) }

  func add(_ request: DownloadRequest) async throws(HaulError) -> DownloadID {
    let ids = try await manager.add([request])
    guard let id = ids.first else { throw HaulError(.generic, "the catalog gave no id to \(request.url)") }
    return id
  }

  func limits() async throws(HaulError) -> (maxConcurrent: Int, overallRateLimit: Int64?) {
    (manager.maxConcurrentDownloads, manager.overallRateLimit)
  }

  func setLimits(maxConcurrent: Int?, overallRateLimit: Int64?) async throws(HaulError) {
    if let maxConcurrent { try await manager.setMaxConcurrentDownloads(maxConcurrent) }
    if let overallRateLimit { try manager.setOverallRateLimit(overallRateLimit) }
  }

  func setOverallRateLimit(_ bytesPerSecond: Int64?) async throws(HaulError) {
    try manager.setOverallRateLimit(bytesPerSecond)
  }

  func setRateLimit(_ bytesPerSecond: Int64?, of id: DownloadID) async throws(HaulError) {
    try await manager.setRateLimit(bytesPerSecond, of: id)
  }
}

/// `haul ui` attached to the process that owns the catalog, through its control socket:
/// `haul.snapshot` for what it shows, the subcommands' methods (`ControlMethods`) for its keys.
/// Every kind of owner serves them (`ControlServer.start` adds them to whatever it serves).
struct UIOwnerBackend: UIBackend {
  let client: ControlClient

  var ownerProcess: pid_t? { client.ownerProcess }
  var isGone: Bool { client.isClosedByOwner }

  func snapshot() async throws(HaulError) -> UISnapshot {
    let snapshot = try ControlSnapshot(json: try await client.perform(ControlMethods.snapshot, []))
    return UISnapshot(
      items: snapshot.downloads.map(UIScreen.Item.init),
      active: snapshot.active, bytesPerSecond: snapshot.bytesPerSecond, maxConcurrent: snapshot.maxConcurrent,
      overallRateLimit: snapshot.overallRateLimit)
  }

  func pause(_ id: DownloadID) async throws(HaulError) { try await change(ControlMethods.pause, id) }
  func resume(_ id: DownloadID) async throws(HaulError) { try await change(ControlMethods.resume, id) }
  func cancel(_ id: DownloadID) async throws(HaulError) { try await change(ControlMethods.cancel, id) }
  func remove(_ id: DownloadID) async throws(HaulError) { try await change(ControlMethods.remove, id) }

  private func change(_ method: String, _ id: DownloadID) async throws(HaulError) {
    _ = try await client.perform(method, [.array([.string(id.description)])])
  }

  func add(_ request: DownloadRequest) async throws(HaulError) -> DownloadID {
    let answer = try await client.perform(
      ControlMethods.add, [["requests": .array([ControlCoding.json(request)])]])
    guard let id = answer.array?.first?.string.flatMap(DownloadID.init) else {
      throw HaulError(.generic, "the catalog's owner answered \(ControlMethods.add) without an id")
    }
    return id
  }

  func limits() async throws(HaulError) -> (maxConcurrent: Int, overallRateLimit: Int64?) {
    try await limits([:])
  }

  func setLimits(maxConcurrent: Int?, overallRateLimit: Int64?) async throws(HaulError) {
    var changes: JSONObject = [:]
    if let maxConcurrent { changes["maxConcurrent"] = .integer(Int64(maxConcurrent)) }
    if let overallRateLimit { changes["overallRateLimit"] = .integer(overallRateLimit) }
    _ = try await limits(changes)
  }

  func setOverallRateLimit(_ bytesPerSecond: Int64?) async throws(HaulError) {
    _ = try await limits(["overallRateLimit": bytesPerSecond.map(JSONValue.integer) ?? .null])
  }

  func setRateLimit(_ bytesPerSecond: Int64?, of id: DownloadID) async throws(HaulError) {
    _ = try await client.perform(
      ControlMethods.rateLimit, [.string(id.description), bytesPerSecond.map(JSONValue.integer) ?? .null])
  }

  private func limits(_ changes: JSONObject) async throws(HaulError) -> (
    maxConcurrent: Int, overallRateLimit: Int64?
  ) {
    let answer = try await client.perform(ControlMethods.limits, [.object(changes)])
    guard let limit = answer["maxConcurrent"]?.integer else {
      throw HaulError(.generic, "the catalog's owner answered \(ControlMethods.limits) without its limit")
    }
    return (Int(clamping: limit), answer["overallRateLimit"]?.integer)
  }
}
