import FoundationEssentials
import Haul
import HaulRPC

/// How a subcommand that changes the catalog reaches it: with a `DownloadManager` of its own
/// that runs nothing (`LaunchPolicy.hold`) when no process owns the catalog, else through the
/// owner's control socket (`haul run`, `haul ui` or the daemon), so that the change takes effect
/// in the running process. An owner that does not answer within `ControlClient.commandPatience` (it
/// is stopped) is given up on, with its own exit status (`ExitStatus.ownerUnanswered`).
enum CatalogAccess {
  case direct(DownloadManager)
  /// The owner's socket; ids and names are read from the catalog (`DownloadManager.read`).
  case owner(ControlClient)

  /// How long a subcommand that finds the catalog in use waits for its owner's socket (an owner
  /// that has just opened the catalog makes it a moment later): `haul ui`.
  static let ownerStartup = 5.0

  /// How long a subcommand waits for a catalog in use by a process that serves no socket: most
  /// often another short-lived subcommand (`xargs -P` of `haul add`), which ends within moments.
  static let lockWait = Duration.seconds(10)

  /// The owner when one answers on the control socket, else a manager of this process.
  /// `creating`: make the default catalog's directory when missing (`haul add`). While another
  /// process holds the catalog, tries both again until `lockWait` runs out.
  ///
  /// - Throws: `HaulError`: the catalog is refused (not a Haul catalog, corrupt, newer), or
  ///   another process holds it for longer than `lockWait` without serving requests (a program
  ///   using the library).
  static func open(_ location: CatalogLocation, creating: Bool) async throws(HaulError) -> CatalogAccess {
    let deadline = ContinuousClock.now + lockWait
    var prepared = false
    while true {
      if let client = ControlClient.connect(location, answerWithin: ControlClient.commandPatience) {
        return .owner(client)
      }
      if creating, !prepared {
        try location.prepareDirectory()
        prepared = true
      }
      var configuration = DownloadManager.Configuration()
      configuration.launch = .hold
      do throws(HaulError) {
        return .direct(
          try DownloadManager(catalog: URL(fileURLWithPath: location.path), configuration: configuration))
      } catch {
        // In use: by another subcommand, or by an owner about to serve; either soon lets go.
        guard error.underlying is CatalogInUse, ContinuousClock.now < deadline else { throw error }
        // Jittered, so that many waiting subcommands do not retry in step.
        try? await Task.sleep(for: .milliseconds(Int.random(in: 20...80)))
      }
    }
  }

  /// Ends this process's use (a direct manager closes and releases the catalog).
  func close() async {
    switch self {
    case .direct(let manager): await manager.close()
    case .owner(let client): client.hangUp()
    }
  }

  /// The ids the user typed, resolved against the catalog, all or nothing; with each one as
  /// listed (its name and file, for messages).
  func resolve(_ given: [String]) throws(HaulError) -> (
    ids: [DownloadID], downloads: [DownloadID: DownloadSnapshot]
  ) {
    let resolver = try IDResolver(given)
    switch self {
    case .direct(let manager):
      let ids = try resolver.resolve(among: manager.downloads().map(\.id))
      var downloads: [DownloadID: DownloadSnapshot] = [:]
      for id in ids { downloads[id] = manager.download(id) }
      return (ids, downloads)
    case .owner(let client):
      // Everything the owner committed is in the catalog; read it without disturbing the owner.
      var matcher = IDResolver.Matcher(resolver)
      var candidates: [DownloadID: DownloadSnapshot] = [:]
      try DownloadManager.read(catalog: URL(fileURLWithPath: client.location.path)) { download in
        matcher.feed(download.id)
        let text = download.id.description
        if resolver.prefixes.contains(where: { text.hasPrefix($0) }) { candidates[download.id] = download }
      }
      let ids = try matcher.result().compactMap(DownloadID.init)
      return (ids, candidates.filter { ids.contains($0.key) })
    }
  }

  func add(_ requests: [DownloadRequest], at position: QueuePosition, paused: Bool) async throws(HaulError)
    -> [DownloadID]
  {
    switch self {
    case .direct(let manager): return try await manager.add(requests, at: position, paused: paused)
    case .owner(let client):
      var parameters: JSONObject = [
        "requests": .array(requests.map(ControlCoding.json)), "paused": .bool(paused),
      ]
      if case .index(let index) = position { parameters["position"] = .integer(Int64(index)) }
      // The owner commits each download: a long list may take it longer than a short one.
      let answer = try await client.perform(
        ControlMethods.add, [.object(parameters)],
        within: ControlClient.commandPatience + .milliseconds(requests.count))
      let ids = (answer.array ?? []).compactMap { $0.string.flatMap(DownloadID.init) }
      guard ids.count == requests.count else {
        throw HaulError(.generic, "the catalog's owner answered \(ControlMethods.add) without an id for each")
      }
      return ids
    }
  }

  func pause(_ ids: [DownloadID]?) async throws(HaulError) {
    switch self {
    case .direct(let manager):
      if let ids { try await manager.pause(ids) } else { try await manager.pauseAll() }
    case .owner(let client): _ = try await client.perform(ControlMethods.pause, [Self.json(ids)])
    }
  }

  func resume(_ ids: [DownloadID]?) async throws(HaulError) {
    switch self {
    case .direct(let manager):
      if let ids { try await manager.resume(ids) } else { try await manager.resumeAll(includingFailed: true) }
    case .owner(let client): _ = try await client.perform(ControlMethods.resume, [Self.json(ids)])
    }
  }

  func remove(_ ids: [DownloadID], deletingFiles: Bool) async throws(HaulError) {
    switch self {
    case .direct(let manager): try await manager.remove(ids, deletingFiles: deletingFiles)
    case .owner(let client):
      _ = try await client.perform(ControlMethods.remove, [Self.json(ids), .bool(deletingFiles)])
    }
  }

  private static func json(_ ids: [DownloadID]?) -> JSONValue {
    ids.map { .array($0.map { .string($0.description) }) } ?? .null
  }
}
