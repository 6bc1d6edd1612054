import Dispatch
import FoundationEssentials

/// How one round of connections ended, as the retry loop sees it.
enum AttemptOutcome: Sendable {
  /// Every byte is in the `.part` file.
  case completed
  /// The file at the target was already complete; `changed` when the server now has another version.
  case alreadyComplete(changed: Bool)
  /// A response could not be used safely; start over from byte 0.
  case restart(reason: String)
  /// A transient failure; try again after a delay.
  case transient(HaulError, retryAfter: Double?)
  /// A failure that retrying will not fix.
  case failed(HaulError)
  /// Stopped by pause or cancel.
  case stopped
}

/// What one connection asks for.
enum ConnectionPlan: Sendable {
  /// Bytes from `offset` to the end, size unknown or not yet known (the first connection).
  case stream(offset: Int64)
  /// One segment of a resource whose size is known: `[start, end)`.
  case segment(id: Int, start: Int64, end: Int64, total: Int64)
  /// A range nobody holds (a new round's first connection); `launch` opens its segment.
  case missing(start: Int64, end: Int64, total: Int64)
  /// Whether a finished file is still the server's version, fetching nothing if so.
  case checkFinished(record: ResumeState)

  var offset: Int64 {
    switch self {
    case .stream(let offset): offset
    case .segment(_, let start, _, _), .missing(let start, _, _): start
    case .checkFinished(let record): record.totalBytes ?? 0
    }
  }
}

/// One `Download.run()`: resolves the files, runs rounds of connections until the file is
/// complete or a failure is final, and keeps the state durable on the way.
///
/// Threads: body bytes and transfer ends arrive on the transport's event thread; the retry
/// loop runs in the caller's task; a timer adds connections. Shared fields sit in one lock,
/// and no file I/O or continuation resume happens while holding it.
final class DownloadRun: Sendable {
  let url: String
  /// `url` as state files record it: without a password.
  let recordedURL: String
  let destination: DownloadDestination
  let options: DownloadOptions
  let transport: any Transport
  let control: DownloadControl
  let emit: @Sendable (DownloadEvent) -> Void
  let rateLimiter: RateLimiter?
  /// Segments are never split below this many bytes.
  let minimumSplit: Int64

  /// A connection's buffer size, for libcurl's reads and for direct writes: 1 MiB for one or
  /// two connections (fewer, larger reads and writes cost less CPU), less when there are more
  /// (2 MiB of each kind shared out, 256 KiB at least), so memory stays small and flat. In
  /// automatic mode the first connection gets 1 MiB and those added later a share as if all
  /// `automaticConnectionCap` ran. `running`: connections running, this one included.
  func bufferSize(running: Int) -> Int {
    let budget = 2 << 20
    let connections =
      options.connections ?? (running <= 1 ? 1 : DownloadOptions.automaticConnectionCap)
    return max(256 << 10, min(1 << 20, budget / max(1, connections)))
  }

  /// Whose bytes a connection writes: the stream of unknown size, or a planned segment.
  enum WriteOwner { case stream, segment(Int) }

  /// The open `.part` file of a chosen target, with its checkpointer.
  struct OpenTarget: Sendable {
    let paths: DownloadPaths
    let part: PartFile
    let checkpointer: Checkpointer
  }

  /// The connections running at once, from the first request until all have ended.
  private struct Round {
    var continuation: CheckedContinuation<AttemptOutcome, Never>?
    /// Connections with a transfer in flight.
    var live = 0
    var handles: [Int: any TransferHandle] = [:]
    /// Set by the first connection that ends the round for all (restart, failure, stop).
    var final: AttemptOutcome?
    var lastError: HaulError?
    var lastRetryAfter: Double?
    var failures = 0
    /// Whether `.started` was emitted in this round.
    var announced = false
  }

  private struct Shared {
    var paths: DownloadPaths?
    var target: OpenTarget?
    /// Identity and held ranges; `ranges` is refreshed from the plan at each checkpoint.
    var state: ResumeState
    /// The segment plan, once the size is known.
    var planner: SegmentPlanner?
    /// Which segment each connection writes.
    var segmentOf: [Int: Int] = [:]
    /// Without a plan (size unknown) a single connection writes sequentially from here.
    var streamOwner: Int?
    var streamOffset: Int64 = 0
    /// Bytes of the stream received after `streamOffset`, waiting in its stager.
    var streamWaiting: Int64 = 0
    var rangesSupported = false
    /// Set after a range response could not be used: this run asks for whole responses only.
    var rangesDistrusted = false
    var controller: ConnectionController
    var round = Round()
    var nextConnection = 1
    /// Bytes held when this session started.
    var resumedFrom: Int64?
    var finalURL: String?
    /// Bytes received over the network in this session, and in the current round.
    var received: Int64 = 0
    var roundReceived: Int64 = 0
    /// Digests of the file front to back (see `PrefixHasher`); set with the target. A hasher
    /// that is replaced (the data starts over) stops.
    var hasher: PrefixHasher? { didSet { if oldValue !== hasher { oldValue?.cancel() } } }
    /// Ranges whose `Content-Digest` failed once; failing again ends the download.
    var digestFailures: [ByteRange] = []
    var lastCheckpoint: UInt64 = 0
    /// How long the last checkpoint's sync took: the next one starts that much earlier, so
    /// durable progress lags by about one interval rather than an interval plus a sync.
    var syncAllowance: UInt64 = 0
    var lastProgress: UInt64 = 0
    var speed = SpeedMeter()

    var heldBytes: Int64 { planner?.writtenBytes ?? streamOffset }
    /// Held bytes plus those received but still waiting in a connection's stager: what
    /// progress shows.
    var receivedBytes: Int64 { planner?.receivedBytes ?? streamOffset + streamWaiting }

    /// Whether a checkpoint is due at `now`: one interval after the last, less the last sync's
    /// duration (at most half an interval).
    func checkpointDue(at now: UInt64, every interval: UInt64) -> Bool {
      now &- lastCheckpoint >= interval - min(syncAllowance, interval / 2)
    }

    /// A connection's stager wrote its bytes up to `written`, with `waiting` more still in it,
    /// or failed (its unwritten bytes are given back).
    mutating func recordWrite(_ owner: WriteOwner, through written: Int64, waiting: Int64, failed: Bool) {
      switch owner {
      case .stream:
        if !failed { streamOffset = written }
        streamWaiting = failed ? 0 : waiting
      case .segment(let id):
        if failed {
          planner?.commitReservation(id, succeeded: false)
        } else {
          planner?.markWritten(id, through: written)
        }
      }
    }

    /// The state with the bytes written so far; only call after those writes completed.
    var snapshot: ResumeState {
      var state = self.state
      if let planner { state.ranges = planner.written } else { state.setContiguous(streamOffset) }
      return state
    }
  }
  private let shared: Locked<Shared>

  init(
    url: String, destination: DownloadDestination, options: DownloadOptions, transport: any Transport,
    control: DownloadControl, emit: @escaping @Sendable (DownloadEvent) -> Void, minimumSplit: Int64 = 1 << 20
  ) {
    self.url = url
    self.recordedURL = RequestURL.withoutPassword(url)
    self.destination = destination
    self.options = options
    self.transport = transport
    self.control = control
    self.emit = emit
    self.minimumSplit = minimumSplit
    self.rateLimiter = options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
    let mode: ConnectionController.Mode =
      options.connections.map { .fixed($0) } ?? .automatic(cap: DownloadOptions.automaticConnectionCap)
    self.shared = Locked(
      Shared(state: ResumeState(url: recordedURL), controller: ConnectionController(mode: mode)))
  }

  // MARK: - The retry loop

  func execute() async throws(HaulError) -> DownloadResult {
    let started = Monotonic.now()
    // However the run ends, background hashing of its bytes stops with it.
    defer { shared.withLock { $0.hasher }?.cancel() }
    var first: ConnectionPlan? = try resolveStart()
    let policy = RetryPolicy(
      baseDelay: options.retryBaseDelay, maxDelay: options.maxRetryDelay,
      maxAttemptsWithoutProgress: max(1, options.maxAttemptsWithoutProgress))
    var failures = 0
    var restarts = 0
    while true {
      try await stopIfRequested()
      let plan = first ?? nextLeadPlan()
      first = nil
      guard let plan else { return try finish(started: started) }
      let outcome = await round(leading: plan)
      if shared.withLock({ $0.roundReceived > 0 }) { failures = 0 }
      switch outcome {
      case .completed:
        return try finish(started: started)
      case .alreadyComplete(let changed):
        return try alreadyComplete(changed: changed, started: started)
      case .restart(let reason):
        restarts += 1
        guard restarts <= 5 else {
          throw HaulError(
            .protocol, "the server's responses are inconsistent: \(reason)",
            hint: "the server may not support resuming; try again later")
        }
        emit(.restarted(reason: reason))
        try resetToEmpty()
      case .transient(let error, let retryAfter):
        try flushCheckpoint()
        failures += 1
        guard policy.allowsAnotherAttempt(afterFailures: failures) else {
          throw HaulError(
            error.category, "\(error.message) (gave up after \(failures) attempts without progress)",
            hint: "run the same command again later to resume from \(bytesText(held()))",
            underlying: error)
        }
        let delay = policy.delay(
          afterFailures: failures, retryAfter: retryAfter, jitter: Double.random(in: 0...1))
        emit(
          .retrying(
            RetryNotice(
              attempt: failures, maxAttempts: policy.maxAttemptsWithoutProgress, delay: delay, reason: error))
        )
        await control.sleep(seconds: delay)
      case .failed(let error):
        try? flushCheckpoint()
        removeIfEmpty()
        throw error
      case .stopped:
        try flushCheckpoint()
        if case .pause = control.request {
          emit(.paused(progressSnapshot()))
          await control.waitWhilePaused()
          if control.request == .run { emit(.resumed) }
        }
        if case .checkFinished = plan { first = plan }
      }
    }
  }

  private func stopIfRequested() async throws(HaulError) {
    await control.waitWhilePaused()
    guard case .cancel(let keepPartial) = control.request else { return }
    try? flushCheckpoint()
    if keepPartial {
      throw HaulError(
        .interrupted, "stopped; \(bytesText(held())) saved", hint: "run the same command again to resume")
    }
    discardPartial()
    throw HaulError(.interrupted, "cancelled; the partial download was discarded")
  }

  private func held() -> Int64 { shared.withLock { $0.heldBytes } }

  /// The first connection of a new round: the first missing range, or the rest of a stream.
  /// nil when every byte is already held.
  private func nextLeadPlan() -> ConnectionPlan? {
    shared.withLock { shared in
      guard let planner = shared.planner else { return .stream(offset: shared.streamOffset) }
      // Between rounds nothing is assigned, so no gap means every byte is held.
      guard let gap = planner.unassigned.first else { return nil }
      return .missing(start: gap.start, end: gap.end, total: planner.total)
    }
  }

  // MARK: - Choosing the files

  /// Finds the target when it is known before any response, opens and locks its files, and
  /// returns the first plan: a resume, a fresh start, or a check of a finished file.
  private func resolveStart() throws(HaulError) -> ConnectionPlan? {
    let paths: DownloadPaths?
    switch destination {
    case .file(let file):
      paths = DownloadPaths(target: file.path)
    case .directory(let directory):
      guard FileIO.isDirectory(directory.path) else {
        throw HaulError(.fileSystem, "the directory \(directory.path) does not exist")
      }
      paths = knownTarget(in: directory.path)
    }
    guard let paths else { return .stream(offset: 0) }
    return try open(paths)
  }

  /// In a directory: an interrupted download of this URL, or a finished file from it under the URL's name.
  private func knownTarget(in directory: String) -> DownloadPaths? {
    for statePath in DownloadPaths.stateFiles(in: directory) {
      if case .success(let state)? = try? StateJournal.load(from: statePath), state.url == recordedURL {
        return DownloadPaths(target: String(statePath.dropLast(".haul".count)))
      }
    }
    let name = FileNameSanitizer.name(fromURL: url) ?? "index.html"
    let candidate = DownloadPaths(directory: directory, name: name)
    if let record = FinishedFileRecord.read(at: candidate.target), record.url == recordedURL {
      return candidate
    }
    return nil
  }

  /// Opens the target's files and decides the first plan (nil: every byte is held already).
  /// Also runs on the event thread when the name comes from a response (`Content-Disposition`).
  private func open(_ paths: DownloadPaths) throws(HaulError) -> ConnectionPlan? {
    guard FileIO.isDirectory(paths.directory) else {
      throw HaulError(.fileSystem, "the directory \(paths.directory) does not exist")
    }
    if FileIO.isDirectory(paths.target) {
      throw HaulError(.fileSystem, "\(paths.target) is a directory", hint: "choose a file name with -o")
    }
    let record = FinishedFileRecord.read(at: paths.target).flatMap { $0.url == recordedURL ? $0 : nil }
    if let record, !FileIO.exists(paths.part) {
      try? FileIO.remove(paths.state)  // left over from a crash just after the final rename
      shared.withLock {
        $0.paths = paths
        $0.state = record
      }
      if options.overwrite { return try open(paths, discardingFinished: true) }
      return .checkFinished(record: record)
    }
    return try open(paths, discardingFinished: false)
  }

  private func open(_ paths: DownloadPaths, discardingFinished: Bool) throws(HaulError) -> ConnectionPlan? {
    if FileIO.exists(paths.target), !discardingFinished, !options.overwrite,
      FinishedFileRecord.read(at: paths.target)?.url != recordedURL
    {
      throw HaulError(
        .fileSystem, "\(paths.target) already exists and was not downloaded by haul from this URL",
        hint: "use --overwrite to replace it, or -o to choose another name")
    }
    let partExisted = FileIO.exists(paths.part)
    let part: PartFile
    do {
      part = try PartFile(path: paths.part)
    } catch {
      switch error {
      case .busy:
        throw HaulError(
          .generic, "another haul process is downloading \(paths.target)",
          hint: "wait for it to finish, or stop it first")
      case .system(let cause):
        throw HaulError(.fileSystem, FileErrorText.describe(cause, path: paths.part), underlying: cause)
      }
    }
    var state = ResumeState(url: recordedURL)
    var notice: String?
    // A state file that is not this download's must be replaced before anything else.
    var replaceState = false
    switch try StateJournal.load(from: paths.state) {
    case .success(let saved)? where saved.url == recordedURL:
      state = saved
    case .success(let saved)?:
      guard options.overwrite else {
        throw HaulError(
          .fileSystem, "\(paths.part) belongs to another download (\(saved.url))",
          hint: "use --overwrite to replace it, or -o to choose another name")
      }
      replaceState = true
    case .failure(let problem)?:
      replaceState = true
      notice = "the saved state \(paths.state) was unusable (\(problem)); starting over"
    case nil:
      if partExisted, part.size() > 0, !options.overwrite {
        throw HaulError(
          .fileSystem, "\(paths.part) exists but was not made by haul",
          hint: "use --overwrite to replace it, or -o to choose another name")
      }
    }
    // Never trust more than the data file really holds (data lost after the last sync, or edited).
    let onDisk = part.size()
    state.ranges = ByteRanges.normalized(
      state.ranges.map { ByteRange(start: $0.start, end: min($0.end, onDisk)) })
    let target = OpenTarget(
      paths: paths, part: part, checkpointer: Checkpointer(part: part, statePath: paths.state))
    let stateToCommit = state
    let minimumSplit = self.minimumSplit
    let hasher = PrefixHasher(part: part, algorithms: hashAlgorithms(announced: state.digests))
    let prefix: Int64 = shared.withLock {
      $0.paths = paths
      $0.target = target
      $0.hasher = hasher
      $0.state = stateToCommit
      if let total = stateToCommit.totalBytes {
        $0.planner = SegmentPlanner(total: total, held: stateToCommit.ranges, minimumSplit: minimumSplit)
        $0.rangesSupported = true  // it served ranges to the run that saved this state
      } else {
        $0.planner = nil
        $0.streamOffset = stateToCommit.contiguousBytes
        $0.streamWaiting = 0
      }
      if $0.resumedFrom == nil { $0.resumedFrom = $0.heldBytes }
      return $0.planner?.verifiedPrefix ?? $0.streamOffset
    }
    // The earlier sessions' bytes are hashed while the new ones arrive.
    hasher.advance(to: prefix)
    if let notice { emit(.restarted(reason: notice)) }
    if replaceState {
      try target.checkpointer.commit(state, truncatingTo: 0)
      FileIO.syncDirectory(paths.directory)
    } else if state.ranges.isEmpty, onDisk > 0 {
      // Nothing else to record now: the first response's version is committed before its
      // first byte (`accept`), and ranges are clamped to the file again at every open.
      do { try part.truncate(to: 0) } catch {
        throw HaulError(.fileSystem, FileErrorText.describe(error, path: paths.part), underlying: error)
      }
    }
    return nextLeadPlan()
  }

  // MARK: - Rounds of connections

  /// Runs connections until all have ended: the lead, plus those the controller adds.
  private func round(leading plan: ConnectionPlan) async -> AttemptOutcome {
    let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "haul.connections"))
    let outcome = await withCheckedContinuation {
      (continuation: CheckedContinuation<AttemptOutcome, Never>) in
      let connection: Int = shared.withLock {
        $0.round = Round(continuation: continuation, live: 1)
        $0.roundReceived = 0
        $0.nextConnection += 1
        return $0.nextConnection - 1
      }
      control.attach { [weak self] in self?.stopRound(with: .stopped) }
      launch(connection, plan)
      timer.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(50))
      timer.setEventHandler { [weak self] in
        self?.addConnectionsIfWanted()
        self?.reportProgressIfDue()
      }
      timer.resume()
    }
    timer.cancel()
    control.detach()
    return outcome
  }

  /// Ends the round for every connection (first reason wins) and cancels their transfers.
  private func stopRound(with outcome: AttemptOutcome) {
    let handles: [any TransferHandle] = shared.withLock {
      if $0.round.final == nil { $0.round.final = outcome }
      return Array($0.round.handles.values)
    }
    for handle in handles { handle.cancel() }
  }

  /// Timer tick, and each accepted response: grows the number of connections when the
  /// controller wants more.
  fileprivate func addConnectionsIfWanted() {
    let now = Monotonic.now()
    let plans: [(Int, ConnectionPlan)] = shared.withLock { shared in
      guard shared.round.continuation != nil, shared.round.final == nil, shared.round.failures == 0,
        var planner = shared.planner
      else { return [] }
      let useful = Int(min(Int64(64), planner.remainingBytes / max(1, minimumSplit)))
      let wanted = shared.controller.update(
        now: now, bytes: shared.received, open: shared.round.live, rangesSupported: shared.rangesSupported,
        maximumUseful: useful)
      var plans: [(Int, ConnectionPlan)] = []
      while shared.round.live < wanted, let segment = planner.claim() {
        let connection = shared.nextConnection
        shared.nextConnection += 1
        shared.round.live += 1
        shared.segmentOf[connection] = segment.id
        plans.append(
          (
            connection,
            .segment(id: segment.id, start: segment.cursor, end: segment.end, total: planner.total)
          ))
      }
      shared.planner = planner
      return plans
    }
    for (connection, plan) in plans { launch(connection, plan) }
  }

  /// Timer tick: a progress event every `progressInterval`, also while no bytes arrive (so a
  /// stall shows as a falling speed rather than a frozen line).
  private func reportProgressIfDue() {
    let now = Monotonic.now()
    let every = UInt64(options.progressInterval * 1e9)
    let progress: DownloadProgress? = shared.withLock { shared in
      guard shared.round.continuation != nil, shared.target != nil, now &- shared.lastProgress >= every else {
        return nil
      }
      shared.lastProgress = now
      shared.speed.record(bytes: shared.received, at: now)
      return DownloadProgress(
        bytes: shared.receivedBytes, totalBytes: shared.state.totalBytes,
        bytesPerSecond: shared.speed.bytesPerSecond,
        connections: max(1, shared.round.live))
    }
    if let progress { emit(.progress(progress)) }
  }

  /// Starts a connection's transfer. The caller has counted it in `round.live`.
  private func launch(_ connection: Int, _ plan: ConnectionPlan) {
    var plan = plan
    if case .missing(let start, let end, let total) = plan {
      let id: Int? = shared.withLock {
        guard let segment = $0.planner?.open(start, end) else { return nil }
        $0.segmentOf[connection] = segment.id
        return segment.id
      }
      plan = id.map { .segment(id: $0, start: start, end: end, total: total) } ?? .stream(offset: start)
    }
    if case .stream = plan { shared.withLock { $0.streamOwner = connection } }
    let (identity, holdsBytes, live) = shared.withLock {
      (ResourceIdentity($0.state), $0.heldBytes > 0, $0.round.live)
    }
    // Ask for the whole file's digest (RFC 9530), verified before the file is given its name.
    var headers = options.headers + [("Want-Repr-Digest", "sha-256=10, sha-512=3")]
    var sentRange = false
    switch plan {
    case .stream, .checkFinished:
      if plan.offset > 0 {
        headers.append(("Range", "bytes=\(plan.offset)-"))
        sentRange = true
      }
    case .segment(_, let start, let end, let total) where start > 0 || end < total || holdsBytes:
      // Open-ended for the tail, as any resume would ask; closed inside, so the connection can be reused.
      headers.append(("Range", end == total ? "bytes=\(start)-" : "bytes=\(start)-\(end - 1)"))
      sentRange = true
    default:
      break
    }
    if sentRange {
      if let validator = identity.ifRangeValue { headers.append(("If-Range", validator)) }
      // A digest of just this range lets a corrupt part be fetched again on its own.
      headers.append(("Want-Content-Digest", "sha-256=10, sha-512=3"))
    }
    let request = TransferRequest(
      url: url, headers: headers, userAgent: options.userAgent, rateLimiter: rateLimiter,
      stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS,
      receiveBufferSize: bufferSize(running: live))
    let sink = ConnectionSink(run: self, connection: connection, plan: plan, sentRange: sentRange)
    let handle = transport.start(request, sink: sink)
    let cancelNow = shared.withLock { shared -> Bool in
      guard shared.round.final == nil else { return true }
      shared.round.handles[connection] = handle
      return false
    }
    if cancelNow { handle.cancel() }
  }

  // MARK: - One connection's events (event thread)

  /// What a connection concluded before its transfer ended.
  enum ConnectionVerdict: Sendable {
    /// End the whole round with this outcome.
    case final(AttemptOutcome)
    /// This connection failed for now; others may go on.
    case transient(HaulError, retryAfter: Double?)
    /// This connection's response is of no use (a server that ignores ranges); others go on.
    case dropped
    /// The segment is full; the rest of the response (after a split) is not needed.
    case segmentFull
  }

  /// The head of a connection's final response: decide where, if anywhere, its body goes.
  fileprivate func receiveHead(
    _ head: ResponseHead, connection: Int, plan: ConnectionPlan, sentRange: Bool
  ) -> (BodyDisposition, ConnectionVerdict?) {
    let response = ResponseSummary(head)
    do {
      if case .checkFinished(let record) = plan {
        switch FinishedFileCheck.compare(
          recorded: ResourceIdentity(record), size: record.totalBytes ?? 0, response: response)
        {
        case .unchanged: return (.abort, .final(.alreadyComplete(changed: false)))
        case .changed: return (.abort, .final(.alreadyComplete(changed: true)))
        case .undecided: break
        }
      }
      if shared.withLock({ $0.target == nil }), (200..<300).contains(response.status) {
        guard case .directory(let directory) = destination else {
          return (.abort, .final(.failed(HaulError(.generic, "internal: no target file"))))
        }
        let paths = DownloadPaths(directory: directory.path, name: chooseName(head))
        if case .checkFinished(let record)? = try open(paths) {
          let verdict = FinishedFileCheck.compare(
            recorded: ResourceIdentity(record), size: record.totalBytes ?? 0, response: response)
          return (.abort, .final(.alreadyComplete(changed: verdict != .unchanged)))
        }
        // A partial under this name would have been found by URL before any request: start at 0.
        shared.withLock { $0.streamOwner = connection }
      }
      let held: ResourceIdentity? = shared.withLock { $0.heldBytes > 0 ? ResourceIdentity($0.state) : nil }
      switch RangeResponse.decide(offset: plan.offset, sentRange: sentRange, held: held, response: response) {
      case .append(let offset):
        try accept(head, response: response, connection: connection, at: offset, replacing: false)
        return (.deliver, nil)
      case .replaceFromStart:
        if isSecondary(connection), let held, Self.sameVersion(held, response.identity) {
          // The server ignores ranges; the other connections carry on with what they have.
          shared.withLock { $0.rangesSupported = false }
          return (.abort, .dropped)
        }
        emit(.restarted(reason: "the server sent the whole file (it changed, or does not resume)"))
        try accept(head, response: response, connection: connection, at: 0, replacing: true)
        return (.deliver, nil)
      case .alreadyComplete:
        if case .stream = plan { return (.discard, .final(.completed)) }
        return (.abort, .final(.restart(reason: "the server no longer has the range it was asked for")))
      case .restart(let reason):
        return (.abort, .final(.restart(reason: reason)))
      case .retry(let error, let retryAfter):
        let seconds = retryAfter.map { Double($0.delay(now: Int64(Date().timeIntervalSince1970))) }
        return (.discard, .transient(error, retryAfter: seconds))
      case .fail(let error):
        return (.abort, .final(.failed(error)))
      }
    } catch {
      return (.abort, .final(.failed(error)))
    }
  }

  /// A `206` with its own `Content-Digest`: its segment is kept whole (pinned) so the complete
  /// response can be checked, and the connection gets the check. From then on new segments
  /// start pinned, so none is split while its request is on the way. nil when there is nothing
  /// to check (the segment may be split again), or the segment was split before the response
  /// came (its bytes are then covered by the whole-file checks only).
  fileprivate func beginRangeCheck(_ head: ResponseHead, connection: Int) -> RangeDigestCheck? {
    var check: RangeDigestCheck?
    if head.status == 206,
      case .range(let first, let last, _)? = head.headers["Content-Range"].flatMap(
        ContentRange.init(headerValue:))
    {
      check = RangeDigestCheck(head: head, range: ByteRange(start: first, end: last + 1))
    }
    let range = check?.range
    let pinned = shared.withLock { shared -> Bool in
      guard let id = shared.segmentOf[connection], let segment = shared.planner?.segment(id) else {
        return false
      }
      let checkable = range.map { segment.cursor == $0.start && segment.end == $0.end } ?? false
      shared.planner?.pin(id, checkable)
      // A server that sends Content-Digest (on a 200 too) will send it with its ranges.
      if checkable || head.headers["Content-Digest"] != nil { shared.planner?.pinsNewSegments = true }
      return checkable
    }
    return pinned ? check : nil
  }

  /// Whether another connection of this round writes (or wrote) bytes this one did not.
  private func isSecondary(_ connection: Int) -> Bool {
    shared.withLock { $0.round.handles.keys.contains { $0 != connection } }
  }

  /// Same version by ETag, else Last-Modified, else size.
  static func sameVersion(_ held: ResourceIdentity, _ response: ResourceIdentity) -> Bool {
    if let tag = held.etag, let other = response.etag { return tag == other }
    if let date = held.lastModified, let other = response.lastModified {
      return date == other && held.totalBytes == response.totalBytes
    }
    return held.totalBytes != nil && held.totalBytes == response.totalBytes
  }

  private func chooseName(_ head: ResponseHead) -> String {
    if let header = head.headers["Content-Disposition"],
      let suggested = ContentDisposition.filename(fromHeaderValue: header),
      let name = FileNameSanitizer.sanitize(suggested)
    {
      return name
    }
    return FileNameSanitizer.name(fromURL: head.finalURL) ?? FileNameSanitizer.name(fromURL: url)
      ?? "index.html"
  }

  /// Accepts a response. From byte 0 with nothing kept (`replacing`, or a fresh start) it records
  /// the new version durably before any byte is written, and ends every other connection.
  private func accept(
    _ head: ResponseHead, response: ResponseSummary, connection: Int, at offset: Int64, replacing: Bool
  ) throws(HaulError) {
    let identity = response.identity
    let finalURL = RequestURL.withoutPassword(head.finalURL)
    let announced = Dictionary(
      uniqueKeysWithValues: ServerDigests.wholeFile(head).map { ($0.key.rawValue, $0.value) })
    let minimumSplit = self.minimumSplit
    let acceptsRanges =
      response.status == 206 || (head.headers["Accept-Ranges"]?.lowercased().contains("bytes") ?? false)
    let (target, fresh, state, resumedFrom, others, announce):
      (OpenTarget?, Bool, ResumeState, Int64, [any TransferHandle], Bool) = shared.withLock { shared in
        let fresh =
          replacing || (offset == 0 && shared.heldBytes == 0 && shared.planner?.active.count ?? 0 <= 1)
        var others: [any TransferHandle] = []
        if fresh {
          shared.state = ResumeState(
            url: recordedURL, finalURL: finalURL, totalBytes: identity.totalBytes, etag: identity.etag,
            lastModified: identity.lastModified)
          shared.hasher = shared.target.map {
            PrefixHasher(part: $0.part, algorithms: hashAlgorithms(announced: announced))
          }
          let firstID = shared.planner?.nextID ?? 1
          shared.segmentOf = [:]
          if let total = identity.totalBytes {
            var planner = SegmentPlanner(total: total, held: [], minimumSplit: minimumSplit, firstID: firstID)
            shared.segmentOf[connection] = planner.open(0, total).id
            shared.planner = planner
            shared.streamOwner = nil
          } else {
            shared.planner = nil
            shared.streamOwner = connection
            shared.streamOffset = 0
            shared.streamWaiting = 0
          }
          shared.resumedFrom = 0
          if replacing { shared.rangesSupported = false }
          others = shared.round.handles.filter { $0.key != connection }.map(\.value)
        } else if shared.state.totalBytes == nil, let total = identity.totalBytes,
          shared.streamOwner == connection
        {
          // A resumed stream learns the size: from now on it is a plan with one segment.
          shared.state.totalBytes = total
          var planner = SegmentPlanner(
            total: total, held: [ByteRange(start: 0, end: offset)], minimumSplit: minimumSplit)
          shared.segmentOf[connection] = planner.open(offset, total).id
          shared.planner = planner
          shared.streamOwner = nil
        }
        if acceptsRanges, !replacing, !shared.rangesDistrusted { shared.rangesSupported = true }
        if shared.state.digests == nil, !announced.isEmpty { shared.state.digests = announced }
        shared.state.finalURL = finalURL
        shared.finalURL = finalURL
        let announce = fresh || !shared.round.announced
        shared.round.announced = true
        // What is on disk was just recorded (or claimed by the saved state): the first
        // checkpoint is due one interval from now, not at the first byte.
        if announce { shared.lastCheckpoint = Monotonic.now() }
        return (shared.target, fresh, shared.snapshot, shared.resumedFrom ?? offset, others, announce)
      }
    guard let target else { throw HaulError(.generic, "internal: no open file for the download") }
    for handle in others { handle.cancel() }
    if fresh { try target.checkpointer.commit(state, truncatingTo: 0) }
    if announce {
      emit(
        .started(
          DownloadStart(
            file: URL(fileURLWithPath: target.paths.target), finalURL: finalURL,
            resumedFrom: resumedFrom, totalBytes: state.totalBytes)))
    }
  }

  /// Body bytes of one connection: hand them to its stager for where they belong, then account
  /// for those the file now holds.
  fileprivate func receiveBody(
    _ bytes: UnsafeRawBufferPointer, connection: Int, stager existing: inout BlockStager?
  ) -> ConnectionVerdict? {
    let waitingEnd = existing?.isHolding == true ? existing?.receivedThrough : nil
    let now = Monotonic.now()
    let checkpointEvery = UInt64(options.checkpointInterval * 1e9)
    // Where these bytes go, reserved so no other connection is given them meanwhile (nil: a
    // connection whose plan was replaced by another's restart, whose bytes are stale).
    // `inlineHasher`: the file's hasher, unless these bytes await their range's digest check.
    typealias Slot = (
      part: PartFile, owner: WriteOwner, offset: Int64, count: Int64, live: Int, checkpointDue: Bool,
      inlineHasher: PrefixHasher?
    )
    let slot: Slot? = shared.withLock { shared in
      guard let part = shared.target?.part else { return nil }
      let due = shared.checkpointDue(at: now, every: checkpointEvery)
      if shared.streamOwner == connection, shared.planner == nil {
        let offset = waitingEnd ?? shared.streamOffset
        return (part, .stream, offset, Int64(bytes.count), shared.round.live, due, shared.hasher)
      }
      // In place (`shared.planner?`): a local copy would copy the plan's arrays on every chunk.
      guard let id = shared.segmentOf[connection],
        let reservation = shared.planner?.reserve(id, upTo: Int64(bytes.count))
      else { return nil }
      return (
        part, .segment(id), reservation.offset, reservation.count, shared.round.live, due,
        reservation.pinned ? nil : shared.hasher
      )
    }
    guard let slot else {
      existing?.discard()
      return .dropped
    }
    let stager = existing ?? BlockStager(file: slot.part, blockSize: bufferSize(running: slot.live))
    existing = stager
    let count = slot.count
    var failure: HaulError?
    var written = stager.writtenThrough
    do {
      if count > 0 {
        written = try stager.append(
          UnsafeRawBufferPointer(rebasing: bytes[0..<Int(count)]), at: slot.offset, hasher: slot.inlineHasher)
      }
      // Waiting bytes go into the file before a checkpoint is taken, and on a slow connection
      // before they are half an interval old, so a crash loses no more than it used to.
      let waited = now > stager.waitingSince ? now - stager.waitingSince : 0
      if stager.isHolding, slot.checkpointDue || waited >= checkpointEvery / 2 {
        written = try stager.flush(hasher: slot.inlineHasher)
      }
    } catch {
      failure = HaulError(.fileSystem, FileErrorText.describe(error, path: stager.path), underlying: error)
    }
    let (checkpoint, full, hasher, prefix): (ResumeState?, Bool, PrefixHasher?, Int64) = shared.withLock {
      shared in
      shared.recordWrite(
        slot.owner, through: written, waiting: stager.receivedThrough - written, failed: failure != nil)
      var full = false
      if case .segment(let id) = slot.owner { full = shared.planner?.isFullyReserved(id) ?? true }
      guard failure == nil else { return (nil, full, nil, 0) }
      shared.received += count
      shared.roundReceived += count
      var checkpoint: ResumeState?
      if shared.checkpointDue(at: now, every: checkpointEvery) {
        shared.lastCheckpoint = now
        checkpoint = shared.snapshot
      }
      return (checkpoint, full, shared.hasher, shared.planner?.verifiedPrefix ?? shared.streamOffset)
    }
    if let failure { return .final(.failed(failure)) }
    hasher?.advance(to: prefix)
    if let checkpoint, let target = shared.withLock({ $0.target }) {
      if let failure = target.checkpointer.failure { return .final(.failed(failure)) }
      target.checkpointer.schedule(checkpoint)
      let allowance = target.checkpointer.lastSyncNanoseconds
      shared.withLock { $0.syncAllowance = allowance }
    }
    // Bytes past the segment's end (it was split after the request) belong to another connection.
    if full, count < Int64(bytes.count) { return .segmentFull }
    return nil
  }

  /// Writes the bytes a connection's stager still holds, if they are still wanted where they
  /// were reserved (a restart or a discarded range drops them). Returns a write failure.
  fileprivate func flushStaged(_ stager: BlockStager, connection: Int) -> HaulError? {
    guard stager.isHolding else { return nil }
    let (owner, hasher): (WriteOwner?, PrefixHasher?) = shared.withLock { shared in
      if shared.streamOwner == connection, shared.planner == nil,
        shared.streamOffset == stager.writtenThrough
      {
        return (.stream, shared.hasher)
      }
      guard let id = shared.segmentOf[connection], let segment = shared.planner?.segment(id),
        segment.cursor == stager.writtenThrough, segment.reserved == stager.receivedThrough
      else { return (nil, nil) }
      return (.segment(id), segment.pinned ? nil : shared.hasher)
    }
    guard let owner else {
      stager.discard()
      return nil
    }
    var failure: HaulError?
    var written = stager.writtenThrough
    do { written = try stager.flush(hasher: hasher) } catch {
      failure = HaulError(.fileSystem, FileErrorText.describe(error, path: stager.path), underlying: error)
    }
    shared.withLock { $0.recordWrite(owner, through: written, waiting: 0, failed: failure != nil) }
    return failure
  }

  /// A connection's transfer ended: account for it, give it the next segment, or end the round.
  /// `mismatch`: the complete response failed its `Content-Digest`; its bytes are discarded and
  /// fetched again, once.
  fileprivate func connectionEnded(
    _ connection: Int, plan: ConnectionPlan, verdict: ConnectionVerdict?, failure: TransportFailure?,
    mismatch: RangeDigestMismatch? = nil
  ) {
    var result = classify(connection, verdict: verdict, failure: failure)
    var next: ConnectionPlan?
    var cancel: [any TransferHandle] = []
    var finished: (CheckedContinuation<AttemptOutcome, Never>, AttemptOutcome)?
    var refetchNotice: RetryNotice?
    shared.withLock { shared in
      shared.round.handles[connection] = nil
      if let id = shared.segmentOf.removeValue(forKey: connection) {
        if mismatch != nil { shared.planner?.discard(id) } else { shared.planner?.release(id) }
      }
      if shared.streamOwner == connection { shared.streamOwner = nil }
      if let mismatch {
        if shared.digestFailures.contains(where: {
          $0.start < mismatch.range.end && mismatch.range.start < $0.end
        }) {
          result = .final(.failed(mismatch.error(again: true)))
        } else {
          shared.digestFailures.append(mismatch.range)
          refetchNotice = RetryNotice(
            attempt: 1, maxAttempts: 2, delay: 0, reason: mismatch.error(again: false))
        }
      }
      switch result {
      case .final(let outcome):
        if shared.round.final == nil {
          shared.round.final = outcome
          cancel = Array(shared.round.handles.values)
        }
      case .transient(let error, let retryAfter):
        shared.round.lastError = error
        shared.round.lastRetryAfter = retryAfter
        shared.round.failures += 1
      case .dropped, .segmentFull:
        break
      }
      let mayContinue: Bool =
        switch result {
        case .segmentFull: true
        case .final, .transient, .dropped: false
        }
      if shared.round.final == nil, mayContinue, case .segment = plan,
        var planner = shared.planner, let segment = planner.claim()
      {
        shared.segmentOf[connection] = segment.id
        shared.planner = planner
        next = .segment(id: segment.id, start: segment.cursor, end: segment.end, total: planner.total)
      } else {
        shared.round.live -= 1
      }
      if next == nil, let refetchNotice {
        // No next range for this connection: the retry loop refetches and reports it.
        shared.round.lastError = refetchNotice.reason
        shared.round.lastRetryAfter = 0
      }
      if shared.round.live == 0, let continuation = shared.round.continuation {
        shared.round.continuation = nil
        finished = (continuation, Self.roundOutcome(shared))
      }
    }
    for handle in cancel { handle.cancel() }
    if let refetchNotice, next != nil { emit(.retrying(refetchNotice)) }
    if let next { launch(connection, next) }
    if let (continuation, outcome) = finished { continuation.resume(returning: outcome) }
  }

  private func classify(_ connection: Int, verdict: ConnectionVerdict?, failure: TransportFailure?)
    -> ConnectionVerdict
  {
    if let verdict { return verdict }
    guard let failure else {
      // A whole response: a stream of unknown size ends here; a segment may have come up short.
      let (isStream, written, total) = shared.withLock {
        ($0.planner == nil, $0.streamOffset, $0.state.totalBytes)
      }
      if isStream {
        shared.withLock { if $0.state.totalBytes == nil { $0.state.totalBytes = written } }
        return total == nil || total == written
          ? .final(.completed)
          : .transient(
            HaulError(.network, "the connection ended after \(written) of \(total ?? 0) bytes"),
            retryAfter: nil)
      }
      return .segmentFull
    }
    if failure.kind == .cancelled { return .final(.stopped) }
    let error = Self.error(for: failure)
    switch failure.kind {
    case .connect, .interrupted, .timedOut, .other: return .transient(error, retryAfter: nil)
    default: return .final(.failed(error))
    }
  }

  private static func roundOutcome(_ shared: Shared) -> AttemptOutcome {
    if let final = shared.round.final { return final }
    if let planner = shared.planner, planner.isComplete { return .completed }
    let error =
      shared.round.lastError
      ?? HaulError(.network, "the connections ended with \(bytesText(shared.heldBytes)) of the file")
    return .transient(error, retryAfter: shared.round.lastRetryAfter)
  }

  static func error(for failure: TransportFailure) -> HaulError {
    switch failure.kind {
    case .connect: HaulError(.network, "cannot connect: \(failure.message)", underlying: failure)
    case .interrupted: HaulError(.network, "the connection broke: \(failure.message)", underlying: failure)
    case .timedOut:
      HaulError(
        .network, "timed out: \(failure.message)", hint: "raise --timeout for slow servers",
        underlying: failure)
    case .tls:
      HaulError(
        .tls, "TLS failed: \(failure.message)",
        hint: "the server's certificate could not be verified; --insecure skips the check (unsafe)",
        underlying: failure)
    case .tooManyRedirects:
      HaulError(.protocol, "too many redirects: \(failure.message)", underlying: failure)
    case .badURL: HaulError(.invalidInput, "unusable URL: \(failure.message)", underlying: failure)
    case .malformedResponse:
      HaulError(.protocol, "the server's reply is not valid HTTP: \(failure.message)", underlying: failure)
    case .aborted, .cancelled, .other: HaulError(.network, failure.message, underlying: failure)
    }
  }

  // MARK: - Ends

  private func flushCheckpoint() throws(HaulError) {
    let (target, state) = shared.withLock { ($0.target, $0.snapshot) }
    guard let target else { return }
    try target.checkpointer.commit(state)
  }

  private func resetToEmpty() throws(HaulError) {
    let (target, state): (OpenTarget?, ResumeState) = shared.withLock {
      $0.state = ResumeState(url: recordedURL)
      $0.planner = nil
      $0.segmentOf = [:]
      $0.streamOwner = nil
      $0.streamOffset = 0
      $0.streamWaiting = 0
      $0.hasher = $0.target.map { PrefixHasher(part: $0.part, algorithms: hashAlgorithms(announced: nil)) }
      $0.rangesSupported = false
      $0.rangesDistrusted = true
      return ($0.target, $0.state)
    }
    try target?.checkpointer.commit(state, truncatingTo: 0)
  }

  /// Sync, stamp, rename into place, drop the sidecar.
  private func finish(started: UInt64) throws(HaulError) -> DownloadResult {
    let (target, state, received, resumedFrom, finalURL, speed, hasher) = shared.withLock {
      (
        $0.target, $0.snapshot, $0.received, $0.resumedFrom ?? 0,
        $0.finalURL ?? $0.state.finalURL ?? recordedURL,
        $0.speed.bytesPerSecond, $0.hasher
      )
    }
    guard let target, let hasher else { throw HaulError(.generic, "internal: finished without a file") }
    let total = state.totalBytes ?? state.contiguousBytes
    var finished = state
    finished.totalBytes = total
    finished.setContiguous(total)
    target.checkpointer.stop()
    do {
      try target.part.truncate(to: total)
      try target.part.sync()
    } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: target.paths.part), underlying: error)
    }
    let sha256 = try verify(hasher, total: total, announced: state.digests ?? [:])
    do {
      FinishedFileRecord.attach(finished, to: target.part)
      try FileIO.rename(target.paths.part, to: target.paths.target)
      try FileIO.remove(target.paths.state)
    } catch {
      throw HaulError(
        .fileSystem, FileErrorText.describe(error, path: target.paths.target), underlying: error)
    }
    FileIO.syncDirectory(target.paths.directory)
    let result = DownloadResult(
      file: URL(fileURLWithPath: target.paths.target), totalBytes: total, bytesReceived: received,
      resumedFrom: resumedFrom, finalURL: finalURL, wasAlreadyComplete: false, remoteChanged: false,
      duration: Monotonic.seconds(since: started), sha256: sha256)
    emit(.progress(DownloadProgress(bytes: total, totalBytes: total, bytesPerSecond: speed, connections: 0)))
    emit(.completed(result))
    return result
  }

  /// What to hash while the bytes arrive: SHA-256 (unless turned off), the expected checksum's
  /// algorithm, the server's.
  private func hashAlgorithms(announced: [String: String]?) -> Set<Checksum.Algorithm> {
    var algorithms: Set<Checksum.Algorithm> = options.computeSHA256 ? [.sha256] : []
    if let checksum = options.checksum { algorithms.insert(checksum.algorithm) }
    for name in (announced ?? [:]).keys {
      if let algorithm = Checksum.Algorithm(rawValue: name) { algorithms.insert(algorithm) }
    }
    return algorithms
  }

  /// Checks the finished bytes against the expected checksum and the server's digests; on a
  /// mismatch the data is discarded (a rerun starts clean) and nothing appears at the target.
  /// Returns the SHA-256 when it was computed.
  private func verify(
    _ hasher: PrefixHasher, total: Int64, announced: [String: String]
  ) throws(HaulError) -> String? {
    var expected: [(Checksum.Algorithm, String, String)] = []
    if let checksum = options.checksum {
      expected.append((checksum.algorithm, checksum.hex, "the expected checksum"))
    }
    for (name, hex) in announced.sorted(by: { $0.key < $1.key }) {
      if let algorithm = Checksum.Algorithm(rawValue: name) {
        expected.append((algorithm, hex, "the server's digest"))
      }
    }
    let digests = try hasher.finish(total: total, algorithms: hashAlgorithms(announced: announced))
    for (algorithm, hex, source) in expected where digests[algorithm] != hex {
      discardPartial()
      throw HaulError(
        .integrity,
        "\(algorithm.rawValue) mismatch: \(source) is \(hex), the download has \(digests[algorithm] ?? "none")",
        hint: "the corrupt download was discarded; run the same command again to fetch it anew")
    }
    return digests[.sha256]
  }

  private func alreadyComplete(changed: Bool, started: UInt64) throws(HaulError) -> DownloadResult {
    let (paths, state) = shared.withLock { ($0.paths, $0.state) }
    guard let paths else { throw HaulError(.generic, "internal: no target") }
    let total = state.totalBytes ?? 0
    let result = DownloadResult(
      file: URL(fileURLWithPath: paths.target), totalBytes: total, bytesReceived: 0, resumedFrom: total,
      finalURL: state.finalURL ?? recordedURL, wasAlreadyComplete: true, remoteChanged: changed,
      duration: Monotonic.seconds(since: started))
    removeIfEmpty()
    emit(.completed(result))
    return result
  }

  /// After a final failure with nothing held, leave no empty `.part` or sidecar behind.
  private func removeIfEmpty() {
    let (target, held) = shared.withLock { ($0.target, $0.heldBytes) }
    guard let target, held == 0 else { return }
    target.checkpointer.stop()
    try? FileIO.remove(target.paths.part)
    try? FileIO.remove(target.paths.state)
  }

  private func discardPartial() {
    guard let target = shared.withLock({ $0.target }) else { return }
    target.checkpointer.stop()
    try? FileIO.remove(target.paths.part)
    try? FileIO.remove(target.paths.state)
  }

  func progressSnapshot() -> DownloadProgress {
    shared.withLock {
      DownloadProgress(
        bytes: $0.receivedBytes, totalBytes: $0.state.totalBytes,
        bytesPerSecond: $0.speed.bytesPerSecond, connections: 0)
    }
  }
}

/// A range whose complete response did not match its `Content-Digest`.
struct RangeDigestMismatch: Sendable {
  let range: ByteRange
  let algorithm: Checksum.Algorithm
  let expected: String
  let actual: String

  func error(again: Bool) -> HaulError {
    let bytes = "bytes \(range.start)–\(range.end - 1)"
    guard again else {
      return HaulError(.integrity, "\(bytes) did not match the server's \(algorithm.rawValue) Content-Digest")
    }
    return HaulError(
      .integrity,
      "\(bytes) failed the server's Content-Digest twice (\(algorithm.rawValue) is \(expected), "
        + "the bytes received have \(actual))",
      hint: "the server or something on the way delivers corrupt data; the verified bytes are kept, "
        + "run the same command later to resume")
  }
}

/// Receives one connection's transfer events and reports its end once.
private final class ConnectionSink: TransferSink {
  private let run: DownloadRun
  private let connection: Int
  private let plan: ConnectionPlan
  private let sentRange: Bool
  private let verdict = Locked<DownloadRun.ConnectionVerdict?>(nil)
  /// Set when the response carries a digest of its range; touched on the event thread only.
  private let rangeCheck = Locked<RangeDigestCheck?>(nil)
  /// This connection's bytes on their way to the file; created with the first body bytes.
  private let stager = Locked<BlockStager?>(nil)

  init(run: DownloadRun, connection: Int, plan: ConnectionPlan, sentRange: Bool) {
    self.run = run
    self.connection = connection
    self.plan = plan
    self.sentRange = sentRange
  }

  func transferDidReceiveHead(_ head: ResponseHead) -> BodyDisposition {
    let (disposition, verdict) = run.receiveHead(
      head, connection: connection, plan: plan, sentRange: sentRange)
    if let verdict { self.verdict.withLock { $0 = verdict } }
    if disposition == .deliver, verdict == nil {
      if let check = run.beginRangeCheck(head, connection: connection) { rangeCheck.withLock { $0 = check } }
      // The size may be known now: more connections start at once rather than at the next tick.
      run.addConnectionsIfWanted()
    }
    return disposition
  }

  func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool {
    rangeCheck.withLock { $0?.update(bytes) }
    // Taken out of its box for the write: no I/O under a lock.
    var stager = self.stager.withLock { $0.take() }
    let verdict = run.receiveBody(bytes, connection: connection, stager: &stager)
    self.stager.withLock { $0 = stager }
    guard let verdict else { return true }
    self.verdict.withLock { $0 = verdict }
    return false
  }

  func transferDidFinish(head: ResponseHead?, failure: TransportFailure?) {
    var verdict = self.verdict.withLock { $0 }
    var mismatch: RangeDigestMismatch?
    if failure == nil, verdict == nil, let check = rangeCheck.withLock({ $0 }),
      case .mismatched(let actual) = check.finish()
    {
      mismatch = RangeDigestMismatch(
        range: check.range, algorithm: check.algorithm, expected: check.expected, actual: actual)
    }
    // The bytes still waiting in the stager count once they are in the file.
    if let stager = self.stager.withLock({ $0.take() }) {
      if mismatch != nil {
        stager.discard()
      } else if let error = run.flushStaged(stager, connection: connection) {
        verdict = .final(.failed(error))
      }
    }
    run.connectionEnded(connection, plan: plan, verdict: verdict, failure: failure, mismatch: mismatch)
  }
}

/// Receive speed over the last few seconds.
struct SpeedMeter: Sendable {
  private var samples: [(time: UInt64, bytes: Int64)] = []
  private(set) var bytesPerSecond: Double = 0

  mutating func record(bytes: Int64, at time: UInt64) {
    samples.append((time, bytes))
    let window: UInt64 = 3_000_000_000
    while let first = samples.first, time &- first.time > window, samples.count > 2 { samples.removeFirst() }
    guard let first = samples.first, time > first.time else { return }
    bytesPerSecond = Double(bytes - first.bytes) / (Double(time - first.time) / 1e9)
  }
}

func bytesText(_ bytes: Int64) -> String { ByteQuantity.format(bytes) }
