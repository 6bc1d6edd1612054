import FoundationEssentials

/// What a manager does with the downloads of its catalog at launch.
public enum LaunchPolicy: Sendable, Equatable {
  /// Downloads that were running or queued start again, up to the concurrency limit.
  case resume
  /// Downloads that were running or queued are paused (and stay paused until resumed);
  /// downloads added later run as usual.
  case pause
  /// Nothing runs in this process: the catalog is listed and changed only (what `haul add`,
  /// `haul ls` or `haul pause` need while no runner is open). States are kept as they are.
  case hold
}

/// A manager's decisions as a value: what starts next under the limit and the queue order,
/// what each command changes, what the end of a run means. Commands and run outcomes go in; a
/// `Transition` comes out: catalog changes to commit first, then actions to carry out, which
/// `apply` returns (with the claims that free slots allow). No I/O, no clock, no lock: the
/// manager mutates it under its lock and acts after releasing it.
///
/// A download runs only after the catalog granted it (`claim`, then `claimed`), so a catalog
/// shared by several processes (issue 15's PostgreSQL queue) decides who runs what.
package struct ManagerStateMachine: Sendable {
  /// Why the manager stops a run.
  package enum StopReason: Sendable, Equatable {
    /// Paused: the state is already `.paused`.
    case pause
    /// Cancelled: the state is already `.removed`.
    case cancel(discard: Bool)
    /// Removed: the record is already gone.
    case remove(discard: Bool)
    /// Its options or URL changed: it runs again at once.
    case restart
    /// The manager closes: released back to the queue for the next launch.
    case shutdown

    /// Whether the partial bytes are thrown away.
    package var discards: Bool {
      switch self {
      case .cancel(let discard), .remove(let discard): discard
      case .pause, .restart, .shutdown: false
      }
    }
  }

  package enum RunPhase: Sendable, Equatable {
    case running
    case stopping(StopReason)
  }

  /// How a run ended.
  package enum RunOutcome: Sendable, Equatable {
    case completed(DownloadResult)
    case failed(HaulError)
    /// Ended by a stop the manager asked for.
    case stopped
  }

  /// What happened, for subscribers (the executor adds the details).
  package enum Notice: Sendable, Equatable {
    case added(DownloadID)
    case queued(DownloadID)
    case started(DownloadID)
    case paused(DownloadID)
    case completed(DownloadID, DownloadResult)
    case failed(DownloadID, HaulError)
    case removed(DownloadID)
    case forgotten(DownloadID)
    case changed(DownloadID)
  }

  /// What to do once a transition is committed.
  package enum Action: Sendable, Equatable {
    /// Ask the catalog for up to this many runnable downloads, then call `claimed`.
    case claim(Int)
    /// Run this claimed download.
    case start(DownloadRecord)
    /// Stop its run; the partial bytes are kept unless the reason discards them.
    case stop(DownloadID, StopReason)
    /// Change the own rate limit of its running download (nil: none), which goes on.
    case setRateLimit(DownloadID, Int64?)
    /// Delete a download's files.
    case deleteFiles(DownloadFiles)
    case notify(Notice)
  }

  /// The result of a command: commit `changes` (all or nothing), then `apply` it.
  package struct Transition: Sendable, Equatable {
    package var changes: [RecordChange] = []
    package var actions: [Action] = []
    /// The run whose end this is: applying it frees the slot (even when the commit failed:
    /// the run is over either way, and the catalog catches up at the next change).
    package var endsRun: DownloadID?

    package init(changes: [RecordChange] = [], actions: [Action] = [], endsRun: DownloadID? = nil) {
      self.changes = changes
      self.actions = actions
      self.endsRun = endsRun
    }
  }

  /// Why a download that needs credentials waits after a relaunch.
  package static let credentialsError = StoredError(
    category: HaulError.Category.authentication.exitCode,
    message: "the download's credentials were not saved (URL passwords and Authorization, "
      + "Proxy-Authorization and Cookie headers are kept in memory only)",
    hint: "give them again (a new URL with the password, or the header in new options) and it continues")

  package private(set) var records: [DownloadID: DownloadRecord] = [:]
  package private(set) var order = QueueOrder()
  package private(set) var runs: [DownloadID: RunPhase] = [:]
  /// Downloads in state `.queued`: what a claim may take (those without a run).
  package private(set) var queued: Set<DownloadID> = []
  /// The most runs at once; at least 1.
  package private(set) var limit: Int
  /// `LaunchPolicy.hold`: never claims.
  package let holding: Bool
  package private(set) var closing = false
  /// The size of the claim in flight, if any.
  package private(set) var pendingClaim: Int?
  /// The files of downloads removed while they ran, for when the run is over.
  package private(set) var orphans: [DownloadID: DownloadFiles] = [:]

  package init(records: [DownloadRecord], limit: Int, holding: Bool) {
    self.limit = max(1, limit)
    self.holding = holding
    self.records.reserveCapacity(records.count)
    // In queue order already (as catalogs list them), the order is built without moving slots.
    for record in records { insert(record) }
  }

  /// Every download in queue order.
  package var ordered: [DownloadRecord] { order.ids.compactMap { records[$0] } }

  /// The waiting queue (queued and paused), in order.
  package var waiting: [QueueOrder.Slot] {
    order.slots.filter { records[$0.id]?.state.isWaiting == true }
  }

  /// The download's place in the waiting queue, if it waits.
  package func waitingIndex(of id: DownloadID) -> Int? {
    guard records[id]?.state.isWaiting == true else { return nil }
    var index = 0
    for slot in order.slots {
      if slot.id == id { return index }
      if records[slot.id]?.state.isWaiting == true { index += 1 }
    }
    return nil
  }

  /// Every waiting download's place in the queue (0 starts next), in one pass: for many
  /// events at once, where `waitingIndex(of:)` for each would walk the queue each time.
  package func waitingIndices() -> [DownloadID: Int] {
    var indices: [DownloadID: Int] = [:]
    for slot in order.slots where records[slot.id]?.state.isWaiting == true {
      indices[slot.id] = indices.count
    }
    return indices
  }

  /// Nothing runs and nothing will start by itself.
  package var isIdle: Bool {
    runs.isEmpty && pendingClaim == nil && (holding || closing || queued.isEmpty)
  }

  // MARK: - Launch

  /// What the launch policy does to the catalog as it was left: runs of a previous process are
  /// over (the catalog released their claims), so active downloads are queued again; queued
  /// ones that need credentials wait for them; with `.pause`, everything queued is paused.
  package func launch(_ policy: LaunchPolicy) -> Transition {
    var transition = Transition()
    for slot in order.slots {
      guard let record = records[slot.id], record.state == .queued || record.state == .active else {
        continue
      }
      if !record.secrets.isEmpty {
        transition.changes.append(.state(record.id, .paused, error: Self.credentialsError))
      } else if policy == .pause {
        transition.changes.append(.state(record.id, .paused, error: nil))
      } else if record.state == .active {
        transition.changes.append(.state(record.id, .queued, error: record.error))
      }
    }
    return transition
  }

  // MARK: - Applying

  /// Applies a committed transition; returns what to do now, claims included.
  package mutating func apply(_ transition: Transition) -> [Action] {
    apply([transition])
  }

  /// Applies transitions committed together (the ends of runs that ended while the catalog
  /// was busy), in order; the free slots are claimed once, after all of them.
  package mutating func apply(_ transitions: [Transition]) -> [Action] {
    var actions: [Action] = []
    for transition in transitions {
      if let id = transition.endsRun {
        runs[id] = nil
        orphans[id] = nil
      }
      for change in transition.changes { apply(change) }
      for case .stop(let id, let reason) in transition.actions where runs[id] != nil {
        runs[id] = .stopping(reason)
      }
      actions += transition.actions
    }
    return actions + schedule()
  }

  /// The catalog granted these downloads (marked active): run them.
  package mutating func claimed(_ granted: [DownloadRecord]) -> [Action] {
    let asked = pendingClaim ?? 0
    pendingClaim = nil
    var actions: [Action] = []
    for grant in granted where runs[grant.id] == nil {
      // What this process knows (the bytes its state files hold) over the catalog's numbers.
      var record = records[grant.id] ?? grant
      record.state = .active
      remove(record.id)
      insert(record)
      runs[record.id] = .running
      actions.append(.notify(.started(record.id)))
      actions.append(.start(record))
    }
    // Fewer than asked: the catalog has no more for now; the next transition asks again.
    return granted.count < asked ? actions : actions + schedule()
  }

  /// The claim failed (e.g. the disk is full); the next transition tries again.
  package mutating func claimFailed() { pendingClaim = nil }

  /// Changes the limit; more downloads start at once if it grew. Runs above a lowered limit
  /// finish (as in aria2); no new one starts until below it.
  package mutating func setLimit(_ newLimit: Int) -> [Action] {
    limit = max(1, newLimit)
    return schedule()
  }

  /// Stops every run for the manager to close; nothing starts any more.
  package mutating func close() -> [Action] {
    closing = true
    var actions: [Action] = []
    for (id, phase) in runs.sorted(by: { $0.key < $1.key }) where phase == .running {
      runs[id] = .stopping(.shutdown)
      actions.append(.stop(id, .shutdown))
    }
    return actions
  }

  /// Claims for the free slots, in queue order (the catalog picks the lowest positions).
  private mutating func schedule() -> [Action] {
    guard !holding, !closing, pendingClaim == nil else { return [] }
    let free = limit - runs.count
    // Walks the runs, not the queue: a queue of thousands is scheduled on every event. A queued
    // download whose run has not ended yet (stopped to restart) cannot be claimed.
    let claimable = queued.count - runs.keys.count { queued.contains($0) }
    let count = min(free, claimable)
    guard count > 0 else { return [] }
    pendingClaim = count
    return [.claim(count)]
  }

  private mutating func apply(_ change: RecordChange) {
    switch change {
    case .insert(let record):
      if records[record.id] != nil { remove(record.id) }
      insert(record)
    case .delete(let id):
      if runs[id] != nil, let record = records[id] { orphans[id] = DownloadFiles(record, finished: false) }
      remove(id)
    default:
      guard var record = records[change.id] else { return }
      let position = record.position
      change.apply(to: &record)
      records[record.id] = record
      // Most changes keep the place: the order (a sorted array) is left as it is then.
      if record.position != position {
        order.remove(record.id, at: position)
        order.insert(QueueOrder.Slot(position: record.position, id: record.id))
      }
      if record.state == .queued { queued.insert(record.id) } else { queued.remove(record.id) }
    }
  }

  private mutating func insert(_ record: DownloadRecord) {
    records[record.id] = record
    order.insert(QueueOrder.Slot(position: record.position, id: record.id))
    if record.state == .queued { queued.insert(record.id) }
  }

  private mutating func remove(_ id: DownloadID) {
    guard let record = records.removeValue(forKey: id) else { return }
    order.remove(id, at: record.position)
    queued.remove(id)
  }

  // MARK: - Runs

  /// The end of a run: the state it leaves, and whatever the stop asked for.
  /// `progress`: the bytes held, size and file last reported; `now`: seconds since 1970.
  package func runEnded(
    _ id: DownloadID, _ outcome: RunOutcome, progress: ProgressRecord, now: Double
  ) -> Transition {
    guard let phase = runs[id] else { return Transition() }
    let reason: StopReason? = if case .stopping(let reason) = phase { reason } else { nil }
    var transition = Transition(endsRun: id)
    guard let record = records[id] else {
      // Removed while it ran: only its files may be left to delete.
      if reason?.discards == true, var files = orphans[id] {
        files.file = progress.file ?? files.file
        files.finished = outcome.isCompleted
        if case .completed(let done) = outcome { files.size = done.totalBytes }
        transition.actions.append(.deleteFiles(files))
      }
      return transition
    }
    var result = RunResult(
      state: record.state, bytes: progress.bytes, totalBytes: progress.totalBytes,
      file: progress.file ?? record.file, error: record.error)
    switch outcome {
    case .completed(let done):
      result.state = .complete
      result.bytes = done.totalBytes
      result.totalBytes = done.totalBytes
      result.file = done.file.path
      result.error = nil
      result.sha256 = done.sha256
      result.finalURL = RequestURL.withoutPassword(done.finalURL)
      result.finishedAt = now
      transition.actions.append(.notify(.completed(id, done)))
    case .failed(let error):
      result.error = StoredError(error)
      if record.state == .active {
        result.state = .failed
        result.finishedAt = now
        transition.actions.append(.notify(.failed(id, error)))
      }
    case .stopped:
      switch reason {
      case .restart?, .shutdown?:
        result.state = .queued
      case .pause?, .cancel?, .remove?:
        break
      case nil:
        // Not asked for: report it rather than run it again behind the user's back.
        let error = HaulError(
          .interrupted, "the download stopped unexpectedly", hint: "resume it to continue")
        result.state = .failed
        result.error = StoredError(error)
        transition.actions.append(.notify(.failed(id, error)))
      }
    }
    if !outcome.isCompleted {
      // Pause and cancel are announced once the run is over.
      switch (reason, result.state) {
      case (.restart?, .queued): transition.actions.append(.notify(.queued(id)))
      case (.pause?, .paused): transition.actions.append(.notify(.paused(id)))
      case (.cancel?, .removed): transition.actions.append(.notify(.removed(id)))
      default: break
      }
    }
    transition.changes.append(.finish(id, result))
    if reason?.discards == true {
      var files = DownloadFiles(record, finished: outcome.isCompleted)
      files.file = result.file
      files.size = result.totalBytes
      transition.actions.append(.deleteFiles(files))
    }
    return transition
  }
}

/// The files of a download to delete.
package struct DownloadFiles: Sendable, Equatable {
  /// The target, when known: its `.part` and state files go.
  package var file: String?
  /// Else the directory where a state file of `url` may be.
  package var directory: String?
  package var url: String
  /// The finished file goes too: only if it is still the one Haul made (`size` bytes, and
  /// its record, where the file system keeps one, names `url`).
  package var finished: Bool
  package var size: Int64?

  package init(file: String?, directory: String?, url: String, finished: Bool, size: Int64? = nil) {
    self.file = file
    self.directory = directory
    self.url = url
    self.finished = finished
    self.size = size
  }

  package init(_ record: DownloadRecord, finished: Bool) {
    let directory: String? = if case .directory(let url) = record.destination { url.path } else { nil }
    self.init(
      file: record.file, directory: record.file == nil ? directory : nil, url: record.url, finished: finished,
      size: record.totalBytes)
  }
}

extension ManagerStateMachine.RunOutcome {
  package var isCompleted: Bool { if case .completed = self { true } else { false } }
}
