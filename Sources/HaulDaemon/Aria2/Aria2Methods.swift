import FoundationEssentials
import Haul
import HaulRPC

/// aria2's methods on a `DownloadManager`: the names, parameters, results and error messages
/// of aria2 1.36's RPC interface, for one-file HTTP(S) downloads.
///
/// Threads: any (the manager is Sendable; the options every new download starts from are
/// behind a lock).
package final class Aria2Methods: Sendable {
  /// What `getGlobalOption` reports about the RPC server itself (nil: served without HTTP).
  package struct ServerFacts: Sendable {
    package var port: UInt16
    package var listenAll: Bool
    package var allowOriginAll: Bool
    package var maximumRequestSize: Int

    package init(port: UInt16, listenAll: Bool, allowOriginAll: Bool, maximumRequestSize: Int) {
      self.port = port
      self.listenAll = listenAll
      self.allowOriginAll = allowOriginAll
      self.maximumRequestSize = maximumRequestSize
    }
  }

  let manager: DownloadManager
  private let defaults: Locked<Aria2Options>
  private let facts: ServerFacts?
  private let shutdown: @Sendable (_ force: Bool) -> Void
  /// Finished records forgotten since launch, for `numStoppedTotal`.
  private let forgotten = Locked(0)

  /// - Parameters:
  ///   - directory: where downloads go unless `dir` says otherwise (aria2's `--dir`).
  ///   - shutdown: stops the daemon, after the reply to `aria2.shutdown` went out.
  package init(
    manager: DownloadManager, directory: String, facts: ServerFacts? = nil,
    shutdown: @escaping @Sendable (_ force: Bool) -> Void
  ) {
    self.manager = manager
    var initial = Aria2Options()
    initial.directory = directory
    defaults = Locked(initial)
    self.facts = facts
    self.shutdown = shutdown
  }

  /// Every method, in aria2's order (`system.*` are the service's own).
  package var methods: [RPCMethod] {
    [
      method("aria2.addUri", Aria2Methods.addUri),
      RPCMethod("aria2.addTorrent", listed: false) { _ in
        throw RPCError("BitTorrent is not supported by haul daemon.")
      },
      method("aria2.getPeers", Aria2Methods.getPeers),
      RPCMethod("aria2.addMetalink", listed: false) { _ in
        throw RPCError("Metalink is not supported by haul daemon.")
      },
      method("aria2.remove", Aria2Methods.remove), method("aria2.pause", Aria2Methods.pause),
      method("aria2.forcePause", Aria2Methods.pause),
      method("aria2.pauseAll", Aria2Methods.pauseAll), method("aria2.forcePauseAll", Aria2Methods.pauseAll),
      method("aria2.unpause", Aria2Methods.unpause),
      method("aria2.unpauseAll", Aria2Methods.unpauseAll), method("aria2.forceRemove", Aria2Methods.remove),
      method("aria2.changePosition", Aria2Methods.changePosition),
      method("aria2.tellStatus", Aria2Methods.tellStatus),
      method("aria2.getUris", Aria2Methods.getUris), method("aria2.getFiles", Aria2Methods.getFiles),
      method("aria2.getServers", Aria2Methods.getServers),
      method("aria2.tellActive", Aria2Methods.tellActive),
      method("aria2.tellWaiting", Aria2Methods.tellWaiting),
      method("aria2.tellStopped", Aria2Methods.tellStopped),
      method("aria2.getOption", Aria2Methods.getOption),
      method("aria2.changeUri", Aria2Methods.changeUri),
      method("aria2.changeOption", Aria2Methods.changeOption),
      method("aria2.getGlobalOption", Aria2Methods.getGlobalOption),
      method("aria2.changeGlobalOption", Aria2Methods.changeGlobalOption),
      method("aria2.purgeDownloadResult", Aria2Methods.purgeDownloadResult),
      method("aria2.removeDownloadResult", Aria2Methods.removeDownloadResult),
    ] + SessionMethods.methods(sessionID: SessionMethods.newSessionID()) + [
      RPCMethod("aria2.shutdown") { [shutdown] _ in
        shutdown(false)
        return "OK"
      },
      RPCMethod("aria2.forceShutdown") { [shutdown] _ in
        shutdown(true)
        return "OK"
      },
      method("aria2.getGlobalStat", Aria2Methods.getGlobalStat),
      // Everything is in the catalog the moment it changes.
      RPCMethod("aria2.saveSession") { _ in "OK" },
    ]
  }

  private func method(
    _ name: String, _ body: @escaping @Sendable (Aria2Methods) -> (RPCParameters) async throws -> JSONValue
  )
    -> RPCMethod
  {
    RPCMethod(name) { [self] params in try await body(self)(params) }
  }

  // MARK: - Adding and removing

  func addUri(_ params: RPCParameters) async throws -> JSONValue {
    let uris = try params.requiredArray(at: 0).compactMap(\.string)
    guard let url = uris.first else { throw RPCError("URI is not provided.") }
    let given = try Aria2Options.parse(try params.object(at: 1) ?? [:])
    let position = try params.integer(at: 2)
    if let position, position < 0 { throw RPCError("Position must be greater than or equal to 0.") }
    let options = given.merged(over: defaults.withLock { $0 })
    let directory = URL(fileURLWithPath: options.directory ?? ".", isDirectory: true)
    let destination: DownloadDestination =
      options.output.map { .file(directory.appendingPathComponent($0)) } ?? .directory(directory)
    var download = DownloadOptions()
    try options.apply(to: &download)
    // The manager's own check of the URL and options (`ManagerInput.validate`), made before the
    // directory is: a refused call must leave no new empty folder behind.
    _ = try Download(url: url, to: destination, options: download)
    // A missing `dir` (its own, or the global one) is made, as aria2c and haul -d do.
    let folder =
      switch destination {
      case .file(let file): file.deletingLastPathComponent()
      case .directory(let directory): directory
      }
    try LocalDirectory.prepare(folder.path)
    let id = try await manager.add(
      url, to: destination, options: download, at: position.map { .index(Int(clamping: $0)) } ?? .end,
      paused: options.paused ?? false)
    return .string(id.description)
  }

  func remove(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard !download.state.isStopped else {
      throw RPCError("Active Download not found for GID#\(download.id)")
    }
    try await manager.cancel(download.id)
    return .string(download.id.description)
  }

  func pause(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard download.state == .active || download.state == .queued else {
      throw RPCError("GID#\(download.id) cannot be paused now")
    }
    try await manager.pause(download.id)
    return .string(download.id.description)
  }

  func pauseAll(_ params: RPCParameters) async throws -> JSONValue {
    try await manager.pauseAll()
    return "OK"
  }

  func unpause(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard download.state == .paused else { throw RPCError("GID#\(download.id) cannot be unpaused now") }
    try await manager.resume(download.id)
    return .string(download.id.description)
  }

  func unpauseAll(_ params: RPCParameters) async throws -> JSONValue {
    try await manager.resumeAll()
    return "OK"
  }

  func purgeDownloadResult(_ params: RPCParameters) async throws -> JSONValue {
    let count = try await manager.forgetFinished()
    forgotten.withLock { $0 += count }
    return "OK"
  }

  func removeDownloadResult(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard download.state.isStopped else {
      throw RPCError("Could not remove download result of GID#\(download.id)")
    }
    try await manager.forget([download.id])
    forgotten.withLock { $0 += 1 }
    return "OK"
  }

  // MARK: - Queue

  func changePosition(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    let offset = Int(clamping: try params.requiredInteger(at: 1))
    let position: QueuePosition
    switch try params.requiredString(at: 2) {
    case "POS_SET": position = .index(offset)
    case "POS_CUR": position = .offset(offset)
    case "POS_END": position = .fromEnd(offset)
    default: throw RPCError("Illegal argument.")
    }
    guard download.state.isWaiting else {
      throw RPCError("GID#\(download.id) not found in the waiting queue.")
    }
    return .integer(Int64(try await manager.move(download.id, to: position)))
  }

  // MARK: - Status

  func tellStatus(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    return Aria2Status.entry(download, keys: try params.strings(at: 1) ?? [])
  }

  func getUris(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard !download.state.isStopped else { throw RPCError("No URI data is available for GID#\(download.id)") }
    return Aria2Status.uris(download)
  }

  func getFiles(_ params: RPCParameters) async throws -> JSONValue {
    Aria2Status.files(try find(try params.requiredString(at: 0)))
  }

  func getServers(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard download.state == .active else { throw RPCError("No active download for GID#\(download.id)") }
    return Aria2Status.servers(download)
  }

  /// What aria2c answers for a download that is not BitTorrent (every one of Haul's): no peers
  /// while it is active or waiting; once it has stopped, its error (aria2 keeps no peer data
  /// for a stopped download). Web UIs call it for every download they show.
  func getPeers(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    guard !download.state.isStopped else {
      throw RPCError("No peer data is available for GID#\(download.id)")
    }
    return .array([])
  }

  func tellActive(_ params: RPCParameters) async throws -> JSONValue {
    let keys = try params.strings(at: 0) ?? []
    return .array(
      manager.downloads().filter { $0.state == .active }.map { Aria2Status.entry($0, keys: keys) })
  }

  func tellWaiting(_ params: RPCParameters) async throws -> JSONValue {
    let waiting = manager.downloads().filter(\.state.isWaiting).sorted {
      ($0.queueIndex ?? 0) < ($1.queueIndex ?? 0)
    }
    return try page(waiting, params)
  }

  func tellStopped(_ params: RPCParameters) async throws -> JSONValue {
    let stopped = manager.downloads().filter(\.state.isStopped).sorted {
      ($0.finishedAt ?? $0.addedAt) < ($1.finishedAt ?? $1.addedAt)
    }
    return try page(stopped, params)
  }

  private func page(_ downloads: [DownloadSnapshot], _ params: RPCParameters) throws -> JSONValue {
    let offset = try params.requiredInteger(at: 0)
    let count = try params.requiredInteger(at: 1, atLeast: 0)
    let keys = try params.strings(at: 2) ?? []
    return .array(
      Aria2Status.page(downloads, offset: offset, count: count).map { Aria2Status.entry($0, keys: keys) })
  }

  func getGlobalStat(_ params: RPCParameters) async throws -> JSONValue {
    let statistics = manager.statistics
    return [
      "downloadSpeed": .string(String(Int64(statistics.bytesPerSecond.rounded(.down)))), "uploadSpeed": "0",
      "numActive": .string(String(statistics.active)), "numWaiting": .string(String(statistics.waiting)),
      "numStopped": .string(String(statistics.stopped)),
      "numStoppedTotal": .string(String(statistics.stopped + forgotten.withLock { $0 })),
    ]
  }

  // MARK: - Options and URIs

  func getOption(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    let (_, options) = try manager.options(of: download.id)
    return .object(Aria2Options.rendered(options, destination: download.destination))
  }

  func changeOption(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    let given = try Aria2Options.parse(try params.requiredObject(at: 1))
    guard !download.state.isStopped else { throw RPCError("Cannot change option for GID#\(download.id)") }
    var (_, options) = try manager.options(of: download.id)
    try Self.refuseUnchangeable(
      given, shown: Aria2Options.rendered(options, destination: download.destination))
    try given.apply(to: &options)
    try await manager.changeOptions(download.id, to: options)
    return "OK"
  }

  /// aria2 adds URIs to a file's list of mirrors; a Haul download has one URL, so the first URI
  /// added replaces it (the bytes held are kept only if the engine finds the same file there).
  /// The result is aria2's: how many URIs were deleted, how many added.
  func changeUri(_ params: RPCParameters) async throws -> JSONValue {
    let download = try find(try params.requiredString(at: 0))
    let index = try params.requiredInteger(at: 1, atLeast: 1)
    let deleted = try params.requiredArray(at: 2).compactMap(\.string)
    let added = try params.requiredArray(at: 3).compactMap(\.string)
    if let position = try params.integer(at: 4), position < 0 {
      throw RPCError("Position must be greater than or equal to 0.")
    }
    guard index == 1 else { throw RPCError("fileIndex is out of range") }
    guard !download.state.isStopped || download.state == .failed else {
      throw RPCError("Cannot remove URIs from GID#\(download.id)")
    }
    if let url = added.first {
      try await manager.changeURL(download.id, to: url)
      return [1, 1]
    }
    return [.integer(deleted.contains(download.url) ? 1 : 0), 0]
  }

  /// What `changeOption` cannot make, refused rather than answered "OK" with nothing changed:
  /// the manager has no way to move a download it holds (`dir`, `out`: the same values as
  /// `getOption` shows are fine, as clients send them back), `pause` is aria2.pause's, and the
  /// global options are changeGlobalOption's.
  private static func refuseUnchangeable(_ given: Aria2Options, shown: JSONObject) throws(RPCError) {
    func refuse(_ name: String, _ why: String) -> RPCError {
      RPCError("We encountered a problem while processing the option '--\(name)': \(why)")
    }
    if let directory = given.directory, shown["dir"] != .string(directory) {
      throw refuse("dir", "it cannot be changed after the download was added")
    }
    if let output = given.output, shown["out"] != .string(output) {
      throw refuse("out", "it cannot be changed after the download was added")
    }
    if given.paused != nil { throw refuse("pause", "use aria2.pause or aria2.unpause") }
    if given.maxConcurrentDownloads != nil {
      throw refuse("max-concurrent-downloads", "it is a global option (aria2.changeGlobalOption)")
    }
    if given.overallDownloadLimit != nil {
      throw refuse("max-overall-download-limit", "it is a global option (aria2.changeGlobalOption)")
    }
  }

  func getGlobalOption(_ params: RPCParameters) async throws -> JSONValue {
    let options = defaults.withLock { $0 }
    var object = JSONObject()
    object["dir"] = .string(options.directory ?? ".")
    object["max-concurrent-downloads"] = .string(String(manager.maxConcurrentDownloads))
    object["max-overall-download-limit"] = .string(String(manager.overallRateLimit ?? 0))
    if let split = options.split { object["split"] = .string(String(split)) }
    if let perServer = options.connectionsPerServer {
      object["max-connection-per-server"] = .string(String(perServer))
    }
    object["max-download-limit"] = .string(String(options.downloadLimit ?? 0))
    if let headers = options.headers { object["header"] = .string(headers.joined(separator: "\n")) }
    // Haul's own defaults where none was set, as aria2 lists its defaults (AriaNg shows a blank
    // otherwise); each reads back unchanged if a client writes them back. Connections have no
    // fixed default (automatic, up to 16), so split and max-connection-per-server stay unlisted.
    let engine = DownloadOptions()
    let tries = options.maxTries ?? Aria2Options.aria2Tries(engine.maxAttemptsWithoutProgress)
    object["max-tries"] = .string(String(tries))
    object["timeout"] = .string(String(Int(options.timeout ?? engine.stallTimeout)))
    object["user-agent"] = .string(options.userAgent ?? engine.userAgent)
    object["allow-overwrite"] = options.allowOverwrite == true ? "true" : "false"
    object["check-certificate"] = options.checkCertificate == false ? "false" : "true"
    object["continue"] = "true"
    object["enable-rpc"] = "true"
    if let facts {
      object["rpc-listen-port"] = .string(String(facts.port))
      object["rpc-listen-all"] = facts.listenAll ? "true" : "false"
      object["rpc-allow-origin-all"] = facts.allowOriginAll ? "true" : "false"
      object["rpc-max-request-size"] = .string(String(facts.maximumRequestSize))
    }
    return .object(object)
  }

  func changeGlobalOption(_ params: RPCParameters) async throws -> JSONValue {
    var given = try Aria2Options.parse(try params.requiredObject(at: 0))
    // `out`, `pause` and `checksum` name one download, not every new one (aria2 leaves them out
    // of the global options): refused, not dropped with an "OK".
    let oneDownloads = [
      ("out", given.output != nil), ("checksum", given.checksum != nil), ("pause", given.paused != nil),
    ]
    if let (name, _) = oneDownloads.first(where: { $0.1 }) {
      throw RPCError(
        "We encountered a problem while processing the option '--\(name)': give it to aria2.addUri")
    }
    if let limit = given.maxConcurrentDownloads { try await manager.setMaxConcurrentDownloads(limit) }
    if let rate = given.overallDownloadLimit { try manager.setOverallRateLimit(rate == 0 ? nil : rate) }
    given.maxConcurrentDownloads = nil
    given.overallDownloadLimit = nil
    defaults.withLock { defaults in
      let headers = given.headers
      defaults = given.merged(over: defaults)
      if let headers { defaults.headers = headers }
    }
    return "OK"
  }

  // MARK: - GIDs

  /// A download by aria2's GID: 16 hex digits, or a shorter prefix naming one download.
  func find(_ gid: String) throws(RPCError) -> DownloadSnapshot {
    guard !gid.isEmpty, gid.utf8.count <= 16, gid.allSatisfy(\.isHexDigit) else {
      throw RPCError("Invalid GID \(gid)")
    }
    let downloads = manager.downloads()
    if let id = DownloadID(gid) {
      guard let download = downloads.first(where: { $0.id == id }) else {
        throw RPCError("GID \(gid) is not found")
      }
      return download
    }
    let prefix = gid.lowercased()
    let matches = downloads.filter { $0.id.description.hasPrefix(prefix) }
    guard matches.count <= 1 else { throw RPCError("GID \(gid) is not unique") }
    guard let download = matches.first else { throw RPCError("GID \(gid) is not found") }
    return download
  }
}
