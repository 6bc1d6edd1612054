import Dispatch
import FoundationEssentials

/// The secrets of one download, in memory only.
struct Secrets: Sendable, Equatable {
  /// The URL with its password.
  var url: String?
  /// Secret header values by header index (`StoredOptions.headers`).
  var headers: [Int: String] = [:]
}

/// What the manager's threads share, behind one lock. The state machine decides; the rest is
/// what the executor needs to act: live numbers, secrets, the engine's `Download`s.
struct ManagerShared: Sendable {
  var machine: ManagerStateMachine
  var live: [DownloadID: LiveProgress] = [:]
  var secrets: [DownloadID: Secrets] = [:]
  /// `DownloadOptions.refreshURL` of downloads given one in this process: a closure cannot be
  /// stored, so a relaunch loses it.
  var refreshers: [DownloadID: @Sendable (String) async throws -> String?] = [:]
  var downloads: [DownloadID: Download] = [:]
  /// Runs whose numbers changed since the catalog last recorded them.
  var dirty: Set<DownloadID> = []
  var flushScheduled = false
  var idleWaiters: [CheckedContinuation<Void, Never>] = []
  var closing = false
  /// Actions decided while opening, carried out once the executor runs.
  var deferred: [ManagerStateMachine.Action] = []
  /// Runs that ended and wait for the executor (`ManagerCore.runsEnded`).
  var endedRuns: [(id: DownloadID, outcome: ManagerStateMachine.RunOutcome)] = []

  /// Whether memory holds every secret the download needs.
  func hasCredentials(_ record: DownloadRecord) -> Bool {
    ManagerInput.hasCredentials(record, secrets[record.id])
  }

  func missingCredentials(_ ids: [DownloadID]) -> Set<DownloadID> {
    Set(ids.filter { id in machine.records[id].map { !hasCredentials($0) } ?? false })
  }

  /// The URL and options a run uses: the record's, with the secrets and `refreshURL` from memory.
  func runInputs(_ record: DownloadRecord) -> (url: String, options: DownloadOptions) {
    let known = secrets[record.id]
    var options = record.options.options(secretHeaders: known?.headers ?? [:])
    options.refreshURL = refreshers[record.id]
    return (known?.url ?? record.url, options)
  }

  /// Forgets what memory holds for downloads taken off the catalog.
  mutating func forgetMemory(of ids: some Sequence<DownloadID>) {
    for id in ids {
      secrets[id] = nil
      refreshers[id] = nil
    }
  }

  func snapshot(_ id: DownloadID, queueIndex: Int? = nil) -> DownloadSnapshot? {
    machine.records[id].map {
      DownloadSnapshot(
        record: $0, live: live[id], queueIndex: queueIndex, needsCredentials: !hasCredentials($0))
    }
  }

  /// Every download in order, with queue indices (files are checked by the caller, unlocked).
  func snapshots() -> [DownloadSnapshot] {
    var index = 0
    var snapshots: [DownloadSnapshot] = []
    snapshots.reserveCapacity(machine.records.count)
    for slot in machine.order.slots {
      guard let record = machine.records[slot.id] else { continue }
      var queueIndex: Int?
      if record.state.isWaiting {
        queueIndex = index
        index += 1
      }
      snapshots.append(
        DownloadSnapshot(
          record: record, live: live[record.id], queueIndex: queueIndex,
          needsCredentials: !hasCredentials(record)))
    }
    return snapshots
  }
}

/// Carries out a manager's transitions one at a time on a dispatch queue of its own: plan under the
/// lock (pure), commit to the catalog (I/O, no lock held), apply under the lock, then act with
/// no lock held (start and stop runs, delete files, publish events). Runs and their event
/// forwarders are detached tasks that report back here.
actor ManagerCore {
  typealias Action = ManagerStateMachine.Action
  typealias Transition = ManagerStateMachine.Transition

  /// A dispatch queue of its own: catalog commits wait for the disk, which must not hold up
  /// Swift's shared threads or the engine's event thread.
  private let executor = DispatchQueueExecutor(label: "haul.manager.catalog")
  nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

  /// nil once closed.
  private var catalog: (any DownloadCatalog)?
  /// Ends of runs the catalog could not save (its disk full): committed ahead of the next
  /// change, and retried on their own until saved.
  private var unsaved: [RecordChange] = []
  private var retryScheduled = false
  nonisolated let shared: Locked<ManagerShared>
  nonisolated let hub = EventHub()
  nonisolated let overall: BandwidthLimit
  nonisolated let progressInterval: Double

  static let closedError = HaulError(
    .invalidInput, "the download manager is closed", hint: "open a new DownloadManager on the catalog")

  /// Loads the catalog, reads what each download holds from its state file, and commits what
  /// the launch policy changes. The claims it allows are made by `begin()`.
  init(
    catalog: sending any DownloadCatalog, limit: Int, policy: LaunchPolicy, overallRateLimit: Int64?,
    progressInterval: Double
  ) throws(HaulError) {
    var records = try catalog.list()
    ManagerFiles.addSavedProgress(to: &records)
    var machine = ManagerStateMachine(records: records, limit: limit, holding: policy == .hold)
    let launch = machine.launch(policy)
    try catalog.commit(launch.changes)
    let deferred = machine.apply(launch)
    self.catalog = catalog
    shared = Locked(ManagerShared(machine: machine, deferred: deferred))
    overall = BandwidthLimit(bytesPerSecond: overallRateLimit)
    self.progressInterval = progressInterval
  }

  func begin() {
    carryOut(
      shared.withLock { shared in
        defer { shared.deferred = [] }
        return shared.deferred
      })
  }

  // MARK: - Transitions

  /// Plans with `plan` (under the lock, mutating nothing), commits, then applies under the lock
  /// together with `committed`, and acts.
  func perform<Value: Sendable>(
    _ plan: (ManagerShared) throws(HaulError) -> (Transition, Value),
    committed: (inout ManagerShared, Value) -> Void = { _, _ in }
  ) throws(HaulError) -> Value {
    guard let catalog else { throw Self.closedError }
    let planned = shared.withLock { shared in
      Result { () throws(HaulError) in
        guard !shared.closing else { throw Self.closedError }
        return try plan(shared)
      }
    }
    var (transition, value) = try planned.get()
    transition = try commit(transition, to: catalog)
    let actions = shared.withLock { shared in
      committed(&shared, value)
      return shared.machine.apply(transition)
    }
    carryOut(actions)
    return value
  }

  func perform(
    _ plan: (ManagerShared) throws(HaulError) -> Transition,
    committed: (inout ManagerShared) -> Void = { _ in }
  ) throws(HaulError) {
    try perform(
      { (shared) throws(HaulError) in (try plan(shared), ()) }, committed: { shared, _ in committed(&shared) }
    )
  }

  /// Commits a command's changes (after any unsaved ones). When the catalog's disk is full, the
  /// files the command deletes (downloads removed or cancelled with their files) are deleted
  /// first, which frees the space, and the commit is tried once more. Only a full disk does
  /// that: any other failure leaves the files, since deleting them would not let the record go.
  private func commit(_ transition: Transition, to catalog: any DownloadCatalog) throws(HaulError)
    -> Transition
  {
    do throws(HaulError) {
      try save(transition.changes, to: catalog)
      return transition
    } catch  where error.underlying is CatalogDiskFull {
      var rest = transition
      rest.actions = transition.actions.filter { if case .deleteFiles = $0 { false } else { true } }
      guard rest.actions.count < transition.actions.count else { throw error }
      for case .deleteFiles(let files) in transition.actions { ManagerFiles.delete(files) }
      do throws(HaulError) {
        try save(transition.changes, to: catalog)
      } catch {
        // The records stay, holding nothing: an unfinished one 0 bytes, a complete one failed
        // (its file deleted). Both true, and the message says why.
        throw HaulError(
          error.category, error.message + "; the downloads' files were deleted, but they stay listed",
          hint: "free more space, then remove them again", underlying: error.underlying)
      }
      return rest
    }
  }

  private func save(_ changes: [RecordChange], to catalog: any DownloadCatalog) throws(HaulError) {
    try catalog.commit(unsaved + changes)
    unsaved = []
  }

  /// Saves the ends of runs the catalog refused, every few seconds until it takes them.
  private func saveUnsaved(after delay: Double) {
    guard !unsaved.isEmpty, !retryScheduled else { return }
    retryScheduled = true
    Task.detached { [self] in
      try? await Task.sleep(for: .seconds(delay))
      await retryUnsaved(delay)
    }
  }

  private func retryUnsaved(_ delay: Double) {
    retryScheduled = false
    guard let catalog, !unsaved.isEmpty else { return }
    do throws(HaulError) {
      try save([], to: catalog)
    } catch {
      saveUnsaved(after: min(delay * 2, 30))
    }
  }

  func setLimit(_ limit: Int) {
    carryOut(shared.withLock { $0.machine.setLimit(limit) })
  }

  /// Schedules again (after a failed claim).
  func reschedule() {
    carryOut(shared.withLock { $0.machine.apply(Transition()) })
  }

  /// Carries out actions in order (claims and starts add more); then wakes idle waiters.
  func carryOut(_ actions: [Action]) {
    var queue = actions
    var index = 0
    // Places in the queue for the `.added` events of this batch (an add may bring thousands).
    var waitingIndices: [DownloadID: Int]?
    while index < queue.count {
      let action = queue[index]
      index += 1
      switch action {
      case .claim(let count):
        queue += claim(count)
        waitingIndices = nil
      case .start(let record):
        queue += start(record)
        waitingIndices = nil
      case .stop(let id, let reason):
        let download = shared.withLock { $0.downloads[id] }
        download?.cancel(keepPartial: !reason.discards)
      case .setRateLimit(let id, let rate):
        // Validated when the options were given.
        let download = shared.withLock { $0.downloads[id] }
        try? download?.setRateLimit(rate)
      case .deleteFiles(let files): ManagerFiles.delete(files)
      case .notify(let notice): hub.publish([event(notice, waitingIndices: &waitingIndices)])
      }
    }
    let waiters = shared.withLock { shared in
      guard shared.machine.isIdle else { return [CheckedContinuation<Void, Never>]() }
      defer { shared.idleWaiters = [] }
      return shared.idleWaiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// The public event for `notice`. An `.added` snapshot carries the download's place in the
  /// queue, from `waitingIndices` (computed on the first `.added` of a batch, kept for the rest).
  private func event(_ notice: ManagerStateMachine.Notice, waitingIndices: inout [DownloadID: Int]?)
    -> DownloadManagerEvent
  {
    switch notice {
    case .added(let id):
      let snapshot: DownloadSnapshot? = shared.withLock { shared in
        if waitingIndices == nil { waitingIndices = shared.machine.waitingIndices() }
        return shared.snapshot(id, queueIndex: waitingIndices?[id])
      }
      return snapshot.map(DownloadManagerEvent.added) ?? .changed(id)
    case .queued(let id): return .queued(id)
    case .started(let id): return .started(id)
    case .paused(let id): return .paused(id)
    case .completed(let id, let result): return .completed(id, result)
    case .failed(let id, let error): return .failed(id, error)
    case .removed(let id): return .removed(id)
    case .forgotten(let id): return .forgotten(id)
    case .changed(let id): return .changed(id)
    }
  }

  private func claim(_ count: Int) -> [Action] {
    do {
      let granted = try catalog?.claimNext(count) ?? []
      return shared.withLock { $0.machine.claimed(granted) }
    } catch {
      // Nothing was claimed (the disk may be full); try again in a while.
      shared.withLock { $0.machine.claimFailed() }
      Task.detached { [self] in
        try? await Task.sleep(for: .seconds(1))
        await reschedule()
      }
      return []
    }
  }

  // MARK: - Runs

  /// Runs a claimed download through the engine; a download that cannot even be set up ends
  /// at once (the returned actions).
  private func start(_ record: DownloadRecord) -> [Action] {
    var (url, options) = shared.withLock { $0.runInputs(record) }
    options.sharedRateLimit = overall
    // Once the file is known it is pinned: later runs need not look for it by URL.
    let destination =
      record.file.map { DownloadDestination.file(URL(fileURLWithPath: $0)) } ?? record.destination
    let download: Download
    do {
      download = try Download(url: url, to: destination, options: options)
    } catch {
      return ended([(record.id, .failed(error))])
    }
    let id = record.id
    // Registered in the same turn of the actor as the claim, so no option change comes
    // between the record claimed and the run `.setRateLimit` finds.
    shared.withLock { shared in
      shared.downloads[id] = download
      shared.live[id] = LiveProgress(bytes: record.bytes, totalBytes: record.totalBytes, file: record.file)
    }
    Task.detached { [self] in
      let forwarder = Task.detached { [self] in
        for await event in download.events { engineEvent(id, event) }
      }
      let outcome: ManagerStateMachine.RunOutcome
      do throws(HaulError) {
        outcome = .completed(try await download.run())
      } catch {
        outcome = error.category == .interrupted ? .stopped : .failed(error)
      }
      await forwarder.value
      // The first end since the executor last took them asks it to; later ones join it.
      let first = shared.withLock { shared in
        shared.endedRuns.append((id, outcome))
        return shared.endedRuns.count == 1
      }
      if first { await runsEnded() }
    }
    return []
  }

  /// Carries out the ends of runs gathered since the last call, with one commit for them all:
  /// runs that end while the catalog syncs go together into the next commit (with many short
  /// downloads, one sync serves several), and the slots they free are claimed at once.
  func runsEnded() {
    let ends = shared.withLock { shared in
      defer { shared.endedRuns = [] }
      return shared.endedRuns
    }
    guard !ends.isEmpty else { return }
    carryOut(ended(ends))
  }

  private func ended(_ ends: [(id: DownloadID, outcome: ManagerStateMachine.RunOutcome)]) -> [Action] {
    let now = Date().timeIntervalSince1970
    var transitions = ends.map { transition($0.id, $0.outcome, now: now) }
    // The runs are over whether or not this is saved. What the catalog refuses (its disk full)
    // is kept and saved later, so that a failure is not listed as active, then queued.
    if let catalog {
      do throws(HaulError) {
        try save(transitions.flatMap(\.changes), to: catalog)
      } catch {
        unsaved += transitions.flatMap(\.changes)
        saveUnsaved(after: 1)
        for index in transitions.indices {
          transitions[index].actions = transitions[index].actions.map { Self.telling($0, unsaved: error) }
        }
      }
    }
    return shared.withLock { $0.machine.apply(transitions) }
  }

  /// What the end of one run changes, not applied yet.
  private func transition(_ id: DownloadID, _ outcome: ManagerStateMachine.RunOutcome, now: Double)
    -> Transition
  {
    var progress = shared.withLock { shared in
      let live = shared.live.removeValue(forKey: id)
      shared.downloads[id] = nil
      shared.dirty.remove(id)
      let record = shared.machine.records[id]
      return ProgressRecord(
        id: id, bytes: live?.bytes ?? record?.bytes ?? 0, totalBytes: live?.totalBytes ?? record?.totalBytes,
        file: live?.file ?? record?.file)
    }
    // A run that stopped holds what its state file says (received after the last progress
    // event, or discarded), not what was last reported.
    if !outcome.isCompleted, let file = progress.file {
      let saved = SavedProgress.load(for: URL(fileURLWithPath: file))
      progress.bytes = saved?.bytes ?? 0
      progress.totalBytes = saved?.totalBytes ?? progress.totalBytes
    }
    return shared.withLock { $0.machine.runEnded(id, outcome, progress: progress, now: now) }
  }

  /// A failure's notice with a hint that the catalog has not recorded it yet.
  private static func telling(_ action: Action, unsaved error: HaulError) -> Action {
    guard case .notify(.failed(let id, let failure)) = action else { return action }
    let note = "the catalog has not saved this yet (\(error.message)); it is saved once it can be"
    return .notify(
      .failed(
        id,
        HaulError(
          failure.category, failure.message, hint: failure.hint.map { $0 + "; " + note } ?? note,
          underlying: failure.underlying)))
  }

  /// An engine event of a run: live numbers, and the event for subscribers. Runs on the
  /// forwarder's task, not the executor.
  nonisolated func engineEvent(_ id: DownloadID, _ event: DownloadEvent) {
    let (published, scheduleFlush) = shared.withLock { shared -> (DownloadManagerEvent?, Bool) in
      guard var live = shared.live[id] else { return (nil, false) }
      let published: DownloadManagerEvent
      switch event {
      case .started(let start):
        live.file = start.file.path
        live.bytes = start.resumedFrom
        live.totalBytes = start.totalBytes
        published = .responded(id, start)
      case .progress(let progress):
        live.bytes = progress.bytes
        live.totalBytes = progress.totalBytes
        live.bytesPerSecond = progress.bytesPerSecond
        live.connections = progress.connections
        published = .progress(id, progress)
      case .restarted(let reason):
        live.bytes = 0
        published = .restarted(id, reason: reason)
      case .retrying(let notice):
        live.bytesPerSecond = 0
        live.connections = 0
        published = .retrying(id, notice)
      case .paused, .resumed, .completed, .failed:
        return (nil, false)
      }
      shared.live[id] = live
      shared.dirty.insert(id)
      let scheduleFlush = !shared.flushScheduled
      shared.flushScheduled = true
      // A run being stopped says nothing more; its pause or cancel is announced when it ends.
      return (shared.machine.runs[id] == .running ? published : nil, scheduleFlush)
    }
    if scheduleFlush {
      let interval = progressInterval
      Task.detached { [self] in
        try? await Task.sleep(for: .seconds(interval))
        await flushProgress()
      }
    }
    if let published { hub.publish([published]) }
  }

  /// Records the numbers of running downloads for listing (best effort: the engine's state
  /// files are what resuming trusts).
  func flushProgress() {
    let progress = shared.withLock { shared in
      shared.flushScheduled = false
      defer { shared.dirty.removeAll() }
      return shared.dirty.sorted().compactMap { id in
        shared.live[id].map {
          ProgressRecord(id: id, bytes: $0.bytes, totalBytes: $0.totalBytes, file: $0.file)
        }
      }
    }
    try? catalog?.recordProgress(progress)
  }

  // MARK: - Waiting and closing

  /// Returns when nothing runs and nothing will start by itself.
  func idle() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = shared.withLock { shared in
        guard !shared.machine.isIdle else { return true }
        shared.idleWaiters.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Stops every run (each keeps its bytes and is queued again for the next launch), records
  /// their numbers, closes the catalog (releasing its lock) and ends the event streams.
  func close() async {
    let first = shared.withLock { shared in
      defer { shared.closing = true }
      return !shared.closing
    }
    guard first else {
      await idle()
      return
    }
    carryOut(shared.withLock { $0.machine.close() })
    await idle()
    flushProgress()
    if let catalog, !unsaved.isEmpty { try? save([], to: catalog) }
    catalog?.close()
    catalog = nil
    hub.finish()
  }
}
