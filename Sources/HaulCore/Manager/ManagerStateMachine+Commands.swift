import FoundationEssentials

/// The commands: each validates against the current state (all or nothing) and returns the
/// transition, mutating nothing; `apply` makes it happen once it is committed.
extension ManagerStateMachine {
  package static func unknown(_ id: DownloadID) -> HaulError {
    HaulError(.invalidInput, "no download has the id \(id)", hint: "list the downloads to see their ids")
  }

  package func record(_ id: DownloadID) throws(HaulError) -> DownloadRecord {
    guard let record = records[id] else { throw Self.unknown(id) }
    return record
  }

  /// Each id once, in the order given, all known.
  private func known(_ ids: [DownloadID]) throws(HaulError) -> [DownloadRecord] {
    var seen: Set<DownloadID> = []
    var found: [DownloadRecord] = []
    for id in ids where seen.insert(id).inserted { found.append(try record(id)) }
    return found
  }

  // MARK: - Adding

  /// Adds new downloads (ids, URLs and options ready), in order, at `position` of the waiting
  /// queue, queued or paused. A download whose file another unfinished one already targets is refused.
  package func add(_ new: [DownloadRecord], at position: QueuePosition, paused: Bool) throws(HaulError)
    -> Transition
  {
    var taken: [String: DownloadID] = [:]
    for record in records.values where !record.state.isStopped {
      for key in Self.targetKeys(record) { taken[key] = record.id }
    }
    for record in new {
      guard records[record.id] == nil else {
        throw HaulError(.generic, "the id \(record.id) is taken", hint: "add it again")
      }
      for key in Self.targetKeys(record) {
        if let other = taken[key] {
          throw HaulError(
            .invalidInput, "\(Self.describeTarget(record)) is already in the catalog as download \(other)",
            hint: "resume or remove \(other) instead of adding it again")
        }
        taken[key] = record.id
      }
    }
    let waiting = self.waiting
    let index = QueueOrder.destination(of: position, current: waiting.count, count: waiting.count + 1)
    let (positions, renumbered) = order.positions(count: new.count, atWaitingIndex: index, waiting: waiting)
    var transition = Transition(changes: renumbering(renumbered))
    for (record, position) in zip(new, positions) {
      var record = record
      record.position = position
      record.state = paused ? .paused : .queued
      transition.changes.append(.insert(record))
      transition.actions.append(.notify(.added(record.id)))
    }
    return transition
  }

  /// What two unfinished downloads may not share: the target file, or the same URL into the
  /// same directory (the engine would resume one from the other's state).
  private static func targetKeys(_ record: DownloadRecord) -> [String] {
    var keys = record.file.map { ["file:" + $0] } ?? []
    if case .directory(let directory) = record.destination {
      keys.append("directory:" + directory.path + "\u{0}" + record.url)
    }
    return keys
  }

  private static func describeTarget(_ record: DownloadRecord) -> String {
    if let file = record.file { return file }
    if case .directory(let directory) = record.destination { return "\(record.url) into \(directory.path)" }
    return record.url
  }

  private func renumbering(_ positions: [DownloadID: Int64]) -> [RecordChange] {
    positions.sorted { $0.value < $1.value }.compactMap { id, position in
      records[id]?.position == position ? nil : .position(id, position)
    }
  }

  // MARK: - Pause, resume, start

  package func pause(_ ids: [DownloadID]) throws(HaulError) -> Transition {
    var transition = Transition()
    for record in try known(ids) {
      switch record.state {
      case .queued, .active:
        transition.changes.append(.state(record.id, .paused, error: nil))
        // A running one says so when its run has ended (then no progress can follow).
        transition.actions.append(
          runs[record.id] != nil ? .stop(record.id, .pause) : .notify(.paused(record.id)))
      case .paused:
        break
      case .complete, .failed, .removed:
        throw HaulError(
          .invalidInput, "download \(record.id) is \(record.state.rawValue): there is nothing to pause")
      }
    }
    return transition
  }

  /// Pauses every queued and active download.
  package func pauseAll() -> Transition {
    // Only queued and active downloads are passed, which `pause` accepts.
    (try? pause(ordered.filter { $0.state == .queued || $0.state == .active }.map(\.id))) ?? Transition()
  }

  /// Queues paused, failed and cancelled downloads again (and complete ones whose file is in
  /// `missingFiles`). Those in `missingCredentials` are refused until given their secrets.
  package func resume(
    _ ids: [DownloadID], missingCredentials: Set<DownloadID> = [], missingFiles: Set<DownloadID> = []
  ) throws(HaulError) -> Transition {
    var transition = Transition()
    for record in try known(ids) {
      switch record.state {
      case .queued, .active:
        continue
      case .paused, .failed, .removed:
        if missingCredentials.contains(record.id) {
          let error = Self.credentialsError.haulError
          throw HaulError(error.category, "download \(record.id): \(error.message)", hint: error.hint)
        }
        if case .stopping(let reason)? = runs[record.id] {
          // Paused or cancelled, its run not over yet: that stop is announced when the run
          // ends, which sees the download queued again by then. Announced now, before `.queued`.
          switch reason {
          case .pause: transition.actions.append(.notify(.paused(record.id)))
          case .cancel: transition.actions.append(.notify(.removed(record.id)))
          case .remove, .restart, .shutdown: break
          }
        }
        transition.changes.append(.state(record.id, .queued, error: nil))
      case .complete:
        guard missingFiles.contains(record.id) else {
          throw HaulError(
            .invalidInput, "download \(record.id) is complete (\(record.file ?? record.url))",
            hint: "remove it, or delete the file to download it again")
        }
        // Starting over: nothing of the old file is held.
        transition.changes.append(
          .finish(
            record.id, RunResult(state: .queued, bytes: 0, totalBytes: record.totalBytes, file: record.file)))
      }
      transition.actions.append(.notify(.queued(record.id)))
    }
    return transition
  }

  /// Queues every paused download that can run (not those waiting for credentials), and
  /// failed ones too when `includingFailed` (`haul resume --all`; aria2's `unpauseAll` does not),
  /// with the complete ones among `missingFiles` (their finished file is gone: listed as failed).
  package func resumeAll(
    missingCredentials: Set<DownloadID> = [], missingFiles: Set<DownloadID> = [],
    includingFailed: Bool = false
  ) -> Transition {
    let stopped = ordered.filter {
      let failed = $0.state == .failed || ($0.state == .complete && missingFiles.contains($0.id))
      return ($0.state == .paused || (includingFailed && failed)) && !missingCredentials.contains($0.id)
    }
    return (try? resume(stopped.map(\.id), missingFiles: missingFiles)) ?? Transition()
  }

  /// Resumes the download and moves it to the front of the queue: it starts as soon as a slot
  /// is free. Running downloads are left alone.
  package func start(
    _ id: DownloadID, missingCredentials: Set<DownloadID> = [], missingFiles: Set<DownloadID> = []
  ) throws(HaulError) -> Transition {
    let record = try record(id)
    guard record.state != .active else { return Transition() }
    var transition = try resume([id], missingCredentials: missingCredentials, missingFiles: missingFiles)
    let others = waiting.filter { $0.id != id }
    let (positions, renumbered) = order.positions(count: 1, atWaitingIndex: 0, waiting: others)
    transition.changes += renumbering(renumbered.filter { $0.key != id })
    transition.changes.append(.position(id, positions[0]))
    return transition
  }

  // MARK: - Cancel, remove, forget

  /// Stops downloads for good (state `.removed`, listed until forgotten); `discard` deletes
  /// their partial files. Complete downloads are refused: `remove` forgets them.
  package func cancel(_ ids: [DownloadID], discard: Bool) throws(HaulError) -> Transition {
    var transition = Transition()
    for record in try known(ids) {
      switch record.state {
      case .complete:
        throw HaulError(
          .invalidInput, "download \(record.id) is complete: there is nothing to cancel",
          hint: "remove it to take it off the list")
      case .removed:
        break
      case .queued, .active, .paused, .failed:
        transition.changes.append(.state(record.id, .removed, error: nil))
        if runs[record.id] == nil { transition.actions.append(.notify(.removed(record.id))) }
      }
      if runs[record.id] != nil {
        transition.actions.append(.stop(record.id, .cancel(discard: discard)))
      } else if discard {
        transition.actions.append(.deleteFiles(DownloadFiles(record, finished: false)))
      }
    }
    return transition
  }

  /// Cancels every download that is not stopped yet.
  package func cancelAll(discard: Bool) -> Transition {
    let unfinished = ordered.filter { !$0.state.isStopped }.map(\.id)
    return (try? cancel(unfinished, discard: discard)) ?? Transition()
  }

  /// Takes downloads off the catalog, stopping those that run; `discard` also deletes their
  /// files: partial ones, and the finished file of a complete download.
  package func remove(_ ids: [DownloadID], discard: Bool) throws(HaulError) -> Transition {
    var transition = Transition()
    for record in try known(ids) {
      transition.changes.append(.delete(record.id))
      if runs[record.id] != nil {
        transition.actions.append(.stop(record.id, .remove(discard: discard)))
      } else if discard {
        transition.actions.append(.deleteFiles(DownloadFiles(record, finished: record.state == .complete)))
      }
      transition.actions.append(.notify(.forgotten(record.id)))
    }
    return transition
  }

  package func removeAll(discard: Bool) -> Transition {
    (try? remove(order.ids, discard: discard)) ?? Transition()
  }

  /// Forgets finished records (complete, failed, removed), keeping their files (aria2's
  /// `removeDownloadResult`). Unfinished ones are refused.
  package func forget(_ ids: [DownloadID]) throws(HaulError) -> Transition {
    let found = try known(ids)
    if let busy = found.first(where: { !$0.state.isStopped }) {
      throw HaulError(
        .invalidInput, "download \(busy.id) is \(busy.state.rawValue), not finished",
        hint: "cancel or remove it first")
    }
    return Transition(
      changes: found.map { .delete($0.id) }, actions: found.map { .notify(.forgotten($0.id)) })
  }

  /// Forgets every finished record (aria2's `purgeDownloadResult`).
  package func forgetFinished() -> Transition {
    (try? forget(ordered.filter(\.state.isStopped).map(\.id))) ?? Transition()
  }

  // MARK: - Order and changes

  /// Moves a waiting download in the queue as aria2's `changePosition` does.
  /// - Returns: the transition and the download's new index in the waiting queue.
  package func move(_ id: DownloadID, to position: QueuePosition) throws(HaulError) -> (Transition, Int) {
    let record = try record(id)
    let waiting = self.waiting
    guard record.state.isWaiting, let current = waiting.firstIndex(where: { $0.id == id }) else {
      throw HaulError(
        .invalidInput, "download \(id) is \(record.state.rawValue), not waiting in the queue",
        hint: "only queued and paused downloads can be moved")
    }
    let destination = QueueOrder.destination(of: position, current: current, count: waiting.count)
    guard destination != current else { return (Transition(), current) }
    var others = waiting
    others.remove(at: current)
    let (positions, renumbered) = order.positions(count: 1, atWaitingIndex: destination, waiting: others)
    var transition = Transition(changes: renumbering(renumbered.filter { $0.key != id }))
    transition.changes.append(.position(id, positions[0]))
    transition.actions.append(.notify(.changed(id)))
    return (transition, destination)
  }

  /// New options for a download (aria2's `changeOption`); a running one restarts with them,
  /// resuming from what it holds. `credentialsComplete`: memory now has every secret it needs,
  /// so one that waited for them is queued. `sameInMemory`: what memory holds for it (secret
  /// values, a refresher) is unchanged; then a change of the rate limit alone reaches the
  /// running download as it goes (`setRateLimit`), without a restart, as aria2 does.
  package func changeOptions(
    _ id: DownloadID, to options: StoredOptions, secrets: SecretParts, credentialsComplete: Bool,
    sameInMemory: Bool = false
  ) throws(HaulError) -> Transition {
    let record = try record(id)
    return changed(
      record, .options(id, options, secrets: secrets), credentialsComplete: credentialsComplete,
      sameInMemory: sameInMemory)
  }

  /// A new URL for the same file (aria2's `changeUri`): stored for the next run, whose identity
  /// check decides whether the bytes held still belong to it. A running download restarts.
  package func changeURL(
    _ id: DownloadID, to url: String, secrets: SecretParts, credentialsComplete: Bool
  ) throws(HaulError) -> Transition {
    let record = try record(id)
    return changed(
      record, .url(id, url, secrets: secrets), credentialsComplete: credentialsComplete, sameInMemory: false)
  }

  /// An option or URL change (`.options` or `.url`), as `changeOptions` and `changeURL` describe.
  package func change(
    _ change: RecordChange, credentialsComplete: Bool, sameInMemory: Bool = false
  ) throws(HaulError) -> Transition {
    changed(
      try record(change.id), change, credentialsComplete: credentialsComplete, sameInMemory: sameInMemory)
  }

  private func changed(
    _ record: DownloadRecord, _ change: RecordChange, credentialsComplete: Bool, sameInMemory: Bool
  ) -> Transition {
    var transition = Transition(changes: [change])
    if runs[record.id] == .running {
      if sameInMemory, let rate = Self.rateLimitAlone(changing: record, by: change) {
        transition.actions.append(.setRateLimit(record.id, rate))
      } else {
        transition.actions.append(.stop(record.id, .restart))
      }
    }
    if record.state == .paused, record.error == Self.credentialsError, credentialsComplete {
      transition.changes.append(.state(record.id, .queued, error: nil))
      transition.actions.append(.notify(.queued(record.id)))
    }
    transition.actions.append(.notify(.changed(record.id)))
    return transition
  }

  /// The new rate limit when `change` changes nothing else of `record` (options, secret parts),
  /// else nil.
  private static func rateLimitAlone(changing record: DownloadRecord, by change: RecordChange) -> Int64?? {
    guard case .options(_, let options, let secrets) = change,
      secrets.intersection(.inOptions) == record.secrets.intersection(.inOptions)
    else { return nil }
    var others = options
    others.rateLimit = record.options.rateLimit
    return others == record.options ? .some(options.rateLimit) : nil
  }
}
