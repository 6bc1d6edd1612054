import FoundationEssentials

extension DownloadManager {
  // MARK: - Pause, resume, start

  /// Pauses queued or active downloads: a running one stops with every byte it received
  /// durable, and frees its slot. Paused downloads stay paused across launches.
  /// - Throws: `.invalidInput` for an unknown id or a finished download (nothing changes then).
  public func pause(_ ids: [DownloadID]) async throws(HaulError) {
    try await core.perform { (shared) throws(HaulError) in try shared.machine.pause(ids) }
  }

  public func pause(_ id: DownloadID) async throws(HaulError) { try await pause([id]) }

  /// Pauses every queued and active download (aria2's `pauseAll`).
  public func pauseAll() async throws(HaulError) {
    try await core.perform { $0.machine.pauseAll() }
  }

  /// Queues paused, failed or cancelled downloads again; they start when a slot is free and
  /// resume from the bytes they hold. A complete download whose file was deleted is fetched
  /// again. Queued and active ones are left as they are.
  /// - Throws: `.authentication` for a download whose credentials this process was not given
  ///   (see the type's documentation); `.invalidInput` for an unknown id or a complete download.
  public func resume(_ ids: [DownloadID]) async throws(HaulError) {
    let missingFiles = missingFinishedFiles(ids)
    try await core.perform { (shared) throws(HaulError) in
      try shared.machine.resume(
        ids, missingCredentials: shared.missingCredentials(ids), missingFiles: missingFiles)
    }
  }

  public func resume(_ id: DownloadID) async throws(HaulError) { try await resume([id]) }

  /// Queues every paused download that can run (aria2's `unpauseAll`); `includingFailed`
  /// queues failed ones too, as `resume` of their ids would (`haul resume --all`).
  /// A complete download whose finished file was deleted or changed is listed as failed, so
  /// `includingFailed` fetches it again too.
  public func resumeAll(includingFailed: Bool = false) async throws(HaulError) {
    let missingFiles =
      includingFailed ? missingFinishedFiles(core.shared.withLock { Array($0.machine.records.keys) }) : []
    try await core.perform { shared in
      shared.machine.resumeAll(
        missingCredentials: shared.missingCredentials(Array(shared.machine.records.keys)),
        missingFiles: missingFiles, includingFailed: includingFailed)
    }
  }

  /// Resumes the download and moves it to the front of the queue, so that it is the next to
  /// start. An active download is left as it is.
  public func start(_ id: DownloadID) async throws(HaulError) {
    let missingFiles = missingFinishedFiles([id])
    try await core.perform { (shared) throws(HaulError) in
      try shared.machine.start(
        id, missingCredentials: shared.missingCredentials([id]), missingFiles: missingFiles)
    }
  }

  /// Complete downloads among `ids` whose finished file is gone or changed (checked here,
  /// outside the lock).
  private func missingFinishedFiles(_ ids: [DownloadID]) -> Set<DownloadID> {
    let complete = core.shared.withLock { shared in
      ids.compactMap { shared.machine.records[$0] }.filter { $0.state == .complete }
    }
    return Set(complete.filter { ManagerFiles.finishedFileProblem($0) != nil }.map(\.id))
  }

  // MARK: - Cancel, remove, forget

  /// Stops downloads for good: state `.removed`, listed until forgotten (aria2's `remove`).
  /// Their partial files are kept (a later `resume` continues) unless `deletingFiles`.
  /// - Throws: `.invalidInput` for an unknown id or a complete download (use `remove`).
  public func cancel(_ ids: [DownloadID], deletingFiles: Bool = false) async throws(HaulError) {
    try await core.perform { (shared) throws(HaulError) in
      try shared.machine.cancel(ids, discard: deletingFiles)
    }
  }

  public func cancel(_ id: DownloadID, deletingFiles: Bool = false) async throws(HaulError) {
    try await cancel([id], deletingFiles: deletingFiles)
  }

  /// Cancels every download that has not finished.
  public func cancelAll(deletingFiles: Bool = false) async throws(HaulError) {
    try await core.perform { $0.machine.cancelAll(discard: deletingFiles) }
  }

  /// Takes downloads off the catalog, stopping those that run. With `deletingFiles`, their
  /// `.part` and state files go too, and a complete download's file (only if it is still the
  /// one Haul finished).
  public func remove(_ ids: [DownloadID], deletingFiles: Bool = false) async throws(HaulError) {
    try await core.perform(
      { (shared) throws(HaulError) in try shared.machine.remove(ids, discard: deletingFiles) },
      committed: { shared in shared.forgetMemory(of: ids) })
  }

  public func remove(_ id: DownloadID, deletingFiles: Bool = false) async throws(HaulError) {
    try await remove([id], deletingFiles: deletingFiles)
  }

  /// Takes every download off the catalog.
  public func removeAll(deletingFiles: Bool = false) async throws(HaulError) {
    try await core.perform(
      { $0.machine.removeAll(discard: deletingFiles) },
      committed: {
        $0.secrets = [:]
        $0.refreshers = [:]
      })
  }

  /// Forgets finished records (complete, failed, removed), keeping their files (aria2's
  /// `removeDownloadResult`).
  /// - Throws: `.invalidInput` for an unknown id or a download that has not finished.
  public func forget(_ ids: [DownloadID]) async throws(HaulError) {
    try await core.perform(
      { (shared) throws(HaulError) in try shared.machine.forget(ids) },
      committed: { shared in shared.forgetMemory(of: ids) })
  }

  /// Forgets every finished record (aria2's `purgeDownloadResult`).
  /// - Returns: how many were forgotten.
  @discardableResult
  public func forgetFinished() async throws(HaulError) -> Int {
    try await core.perform(
      { shared in
        let transition = shared.machine.forgetFinished()
        return (transition, transition.changes.map(\.id))
      },
      committed: { shared, ids in shared.forgetMemory(of: ids) }
    ).count
  }

  // MARK: - Order, options, URL

  /// Moves a queued or paused download in the waiting queue, as aria2's `changePosition`:
  /// `.index(0)` to the front, `.offset(-1)` one place up, `.fromEnd(0)` to the end.
  /// - Returns: its new index in the waiting queue.
  @discardableResult
  public func move(_ id: DownloadID, to position: QueuePosition) async throws(HaulError) -> Int {
    try await core.perform { (shared) throws(HaulError) in try shared.machine.move(id, to: position) }
  }

  /// New options for a download (aria2's `changeOption`), stored for its next run; a running
  /// download restarts at once with them, resuming from what it holds. A change of the rate
  /// limit alone reaches a running download as it goes, without a restart. Giving a download
  /// that waits for its Authorization header the header again queues it.
  public func changeOptions(_ id: DownloadID, to options: DownloadOptions) async throws(HaulError) {
    let url = try self.options(of: id).url
    try ManagerInput.validate(options, url: url)
    let (stored, secretHeaders) = StoredOptions.split(options)
    let refresh = options.refreshURL
    try await change(
      .options(id, stored, secrets: SecretParts.of(options, secretHeaders: secretHeaders)),
      secrets: { $0.headers = secretHeaders }, memory: { $0.refreshers[id] = refresh },
      // A refresher is a closure: a new one cannot be told from the old, so it restarts.
      sameInMemory: { shared in
        refresh == nil && shared.refreshers[id] == nil
          && (shared.secrets[id]?.headers ?? [:]) == secretHeaders
      })
  }

  /// Changes one download's own rate limit (nil: none), and nothing else of its options: a
  /// running download takes it as it goes, without a restart; a waiting one at its next run.
  ///
  ///     try await manager.setRateLimit(500_000, of: id)  // 500 kB/s from now on
  ///     try await manager.setRateLimit(nil, of: id)      // lifted
  public func setRateLimit(_ bytesPerSecond: Int64?, of id: DownloadID) async throws(HaulError) {
    try Download.validate(rateLimit: bytesPerSecond)
    try await core.perform { (shared) throws(HaulError) in
      let record = try shared.machine.record(id)
      var options = record.options
      options.rateLimit = bytesPerSecond
      // Secrets and memory stay as they are: only the limit differs.
      return try shared.machine.change(
        .options(id, options, secrets: record.secrets),
        credentialsComplete: ManagerInput.hasCredentials(record, shared.secrets[id]), sameInMemory: true)
    }
  }

  /// A new URL for the same file (aria2's `changeUri`). Stored for the next run; a running
  /// download restarts at once. Whether the bytes held can be kept is the engine's identity
  /// check (size and validators must match), not this call's. A URL with a password gives a
  /// download that waits for it its credentials again.
  public func changeURL(_ id: DownloadID, to url: String) async throws(HaulError) {
    let (stored, withPassword) = try ManagerInput.split(url: url)
    try await change(.url(id, stored, secrets: withPassword == nil ? [] : .urlPassword)) {
      $0.url = withPassword
    }
  }

  /// Commits `change` with the secrets memory keeps for it (`secrets`), so that a download that
  /// waited for them knows whether it has them all now.
  /// `sameInMemory`: whether what memory holds for the download stays as it is (see
  /// `ManagerStateMachine.changeOptions`).
  private func change(
    _ change: RecordChange, secrets update: @escaping @Sendable (inout Secrets) -> Void,
    memory: @escaping @Sendable (inout ManagerShared) -> Void = { _ in },
    sameInMemory: @escaping @Sendable (ManagerShared) -> Bool = { _ in false }
  ) async throws(HaulError) {
    let id = change.id
    try await core.perform(
      { (shared) throws(HaulError) in
        var record = try shared.machine.record(id)
        change.apply(to: &record)
        var secrets = shared.secrets[id] ?? Secrets()
        update(&secrets)
        return try shared.machine.change(
          change, credentialsComplete: ManagerInput.hasCredentials(record, secrets),
          sameInMemory: sameInMemory(shared))
      },
      committed: { shared in
        update(&shared.secrets[id, default: Secrets()])
        memory(&shared)
      })
  }

  /// A download's options and URL as its next run uses them (with the secrets this process
  /// holds; without the overall limit, which the manager adds).
  public func options(of id: DownloadID) throws(HaulError) -> (url: String, options: DownloadOptions) {
    try core.shared.withLock { shared in
      Result { () throws(HaulError) in shared.runInputs(try shared.machine.record(id)) }
    }.get()
  }

  // MARK: - Limits

  /// Downloads running at once.
  public var maxConcurrentDownloads: Int { core.shared.withLock { $0.machine.limit } }

  /// Changes the limit while running: more downloads start at once when it grows; when it
  /// shrinks, running ones finish and no new one starts until below it (as aria2 does).
  public func setMaxConcurrentDownloads(_ limit: Int) async throws(HaulError) {
    try Self.validate(limit: limit)
    await core.setLimit(limit)
  }

  /// The overall rate limit, bytes per second, or nil for none.
  public var overallRateLimit: Int64? { core.overall.bytesPerSecond }

  /// Changes the overall limit; it takes effect at once for every running download.
  public func setOverallRateLimit(_ bytesPerSecond: Int64?) throws(HaulError) {
    try Self.validate(rate: bytesPerSecond)
    core.overall.bytesPerSecond = bytesPerSecond
  }

  static func validate(limit: Int) throws(HaulError) {
    guard limit >= 1 else {
      throw HaulError(.invalidInput, "at least one download must be allowed to run (asked for \(limit))")
    }
  }

  static func validate(rate: Int64?) throws(HaulError) {
    if let rate, rate <= 0 { throw HaulError(.invalidInput, "the overall rate limit must be positive") }
  }
}
