/// One download's decisions, as a state machine with no I/O: which transfers run, where their
/// bytes go, when state is recorded, how a round of transfers ends, whether to retry or give
/// up. In the style of async-http-client's `Transaction.StateMachine`: the phase is an enum
/// whose cases carry their own data, every event is a method that returns the actions for
/// the executor (`DownloadRun` in Haul), which mutates the machine under its lock and acts
/// after releasing it.
///
/// Events come from the transport (response head, body bytes, transfer ended), the I/O lane
/// (bytes written, checkpoint done), a timer (tick, retry delay over) and the user (pause,
/// resume, cancel).
///
/// ```swift
/// var machine = DownloadMachine(configuration)
/// var actions = machine.begin(.opened(savedState), now: Monotonic.now())   // [.startTransfer(1, plan)]
/// switch machine.receiveHead(1, facts, now: Monotonic.now()) { … }
/// ```
///
/// Without a strong validator, a range that continues held bytes repeats up to 64 KiB of them
/// (`TransferPlan.overlap`): the transfer stays in `checkingOverlap` until the executor
/// compared them (`BodySlot.compare`, `overlapChecked`), and a difference starts over.
///
/// A 401, 403 or 410 with bytes held fails with an `ExpiredLink` as the error's cause: the
/// run's owner may then start a new run of a fresh URL (`DownloadOptions.refreshURL`), whose
/// first answer must prove the same file (`pendingProof`). A 200 with the held strong ETag to an
/// `If-Range` request is stopped and the range asked for again without `If-Range`.
package struct DownloadMachine: Sendable {
  package struct Configuration: Sendable {
    /// The URL as state files record it (no password).
    package var recordedURL: String
    package var connections: ConnectionController.Mode
    /// `DownloadOptions.connections`: nil in automatic mode.
    package var fixedConnections: Int?
    /// Segments are never split below this many bytes, except at the end of a download when
    /// a smaller half is worth a request (`smallestStolenHalf`), never below `smallestSteal`.
    package var minimumSplit: Int64 = 1 << 20
    package var smallestSteal: Int64 = 64 << 10
    package var checkpointInterval: UInt64 = 250_000_000
    package var progressInterval: UInt64 = 100_000_000
    package var retry: RetryPolicy
    package var maxRestarts = 5
    package var randomSeed: UInt64 = 0x5EED
    /// The strictest rate limit on the download at its start, its own or a shared one, bytes
    /// per second (automatic mode adds no connection that could only share it).
    package var rateLimit: Int64?
    /// The target takes bytes in order only and cannot take them back (standard output, a
    /// pipe): a download that would start over fails instead, once bytes were written.
    package var writesInOrderOnly = false
    /// Requests carry a login (`-u`, netrc, an `Authorization` header): a `401` refuses it.
    package var sendsCredentials = false

    package init(
      recordedURL: String, fixedConnections: Int?, automaticCap: Int = 16, retry: RetryPolicy,
      minimumSplit: Int64 = 1 << 20, checkpointInterval: UInt64 = 250_000_000,
      progressInterval: UInt64 = 100_000_000, randomSeed: UInt64 = 0x5EED, rateLimit: Int64? = nil
    ) {
      self.rateLimit = rateLimit
      self.recordedURL = recordedURL
      self.fixedConnections = fixedConnections
      self.connections = fixedConnections.map { .fixed($0) } ?? .automatic(cap: automaticCap)
      self.retry = retry
      self.minimumSplit = minimumSplit
      self.checkpointInterval = checkpointInterval
      self.progressInterval = progressInterval
      self.randomSeed = randomSeed
    }
  }

  package enum Phase: Sendable, Equatable {
    /// Before `begin`.
    case idle
    /// A round of transfers is running.
    case running(Round)
    /// A round failed; the next starts when `retryDelayOver(token)` comes.
    case waitingToRetry(token: Int)
    case paused
    /// The executor finishes (or reports) the download; no more events matter.
    case ended
  }

  /// How the bytes are laid out in the data file.
  package enum Layout: Sendable, Equatable {
    /// No file yet: the first response names it (a directory destination).
    case unnamed
    /// A finished file whose version is being checked; nothing is written.
    case finished(size: Int64)
    /// Size unknown: one transfer writes in order from byte 0.
    case stream(Stream)
    /// Size known: segments (`SegmentPlanner`), any number of transfers.
    case segmented(SegmentPlanner)
  }

  /// The sequential writer of a resource of unknown size.
  package struct Stream: Sendable, Equatable {
    /// `[0, written)` is in the file.
    package var written: Int64
    /// `[written, reserved)` was received and is on its way to the file.
    package var reserved: Int64
    /// The transfer that writes it.
    package var owner: TransferID?

    package init(written: Int64, owner: TransferID? = nil) {
      self.written = written
      self.reserved = written
      self.owner = owner
    }
  }

  /// The transfers running at once, from the first request until all have ended.
  package struct Round: Sendable, Equatable {
    package var transfers: [TransferID: Transfer] = [:]
    package var state = State.active
    /// Transfers that failed for now (others may go on), the last one's error and wait.
    package var failures = 0
    package var lastError: HaulError?
    package var lastRetryAfter: Double?
    /// Whether every failure of the round was a connection that could not be made.
    package var onlyUnreached = true
    /// Whether `.started` was emitted in this round.
    package var announced = false
    /// Bytes held when the round began (what a resume after a pause starts from).
    package var heldAtStart: Int64

    package enum State: Sendable, Equatable {
      case active
      /// The first transfer that ended the round for all said so; the others are cancelled.
      case ending(RoundEnd)
    }

    /// Transfers whose response has begun: what the connection controller measures. One still
    /// waiting for its head (connecting, a TLS handshake) adds nothing to the rate yet.
    package var transferring: Int {
      transfers.values.count { transfer in
        if case .awaitingHead = transfer.state { false } else { true }
      }
    }
  }

  /// One transfer and what its response turned out to be.
  package struct Transfer: Sendable, Equatable {
    package let plan: TransferPlan
    package var state: State
    /// Body bytes taken from it.
    package var received: Int64 = 0
    /// When it was asked for: its head tells how long a request takes to answer.
    package let startedAt: UInt64
    /// Cancelled because the connection controller stepped back: it ends without taking
    /// another range.
    package var retired = false

    package enum State: Sendable, Equatable {
      case awaitingHead
      case writingStream
      case writingSegment(Int)
      /// Its segment is complete; bytes past it (a split after the request) are not needed.
      case segmentFilled(Int)
      /// A response to try again later (an error status); its body is discarded.
      /// Accepted; the first bytes are held ones asked for again (`TransferPlan.overlap`):
      /// `remaining` of them still to compare, then it writes its segment (nil: the stream).
      case checkingOverlap(segment: Int?, remaining: Int64)
      case retryLater(HaulError, retryAfter: Double?)
      /// Not needed any more (the data was replaced, a secondary got the whole file, the
      /// round ends, or a finished file was checked): its bytes are dropped.
      case superseded
    }
  }

  /// How a round ended.
  package enum RoundEnd: Sendable, Equatable {
    case completed
    /// `notChecked`: why the server's copy could not be compared (unreachable, an error status).
    case alreadyComplete(changed: Bool, notChecked: String? = nil)
    /// A response could not be used safely; start over from byte 0.
    case restart(reason: String)
    /// The first response named a target that holds bytes: ask again, for the bytes missing.
    case replan
    case transient(HaulError, retryAfter: Double?)
    case failed(HaulError)
    case paused
    case cancelled(keepPartial: Bool)
  }

  package let configuration: Configuration
  package internal(set) var phase = Phase.idle
  package internal(set) var layout = Layout.unnamed
  /// Identity of the bytes held (URL, validators, size, digests); ranges come from `layout`.
  package internal(set) var identity: ResumeState
  package internal(set) var budget: RetryBudget
  package internal(set) var controller: ConnectionController
  /// Whether the server has served ranges; without, one connection.
  package internal(set) var rangesSupported = false
  /// Set after a range response could not be used: this run asks for whole responses only.
  package internal(set) var rangesDistrusted = false
  /// Ranges whose `Content-Digest` failed once; failing again ends the download.
  package internal(set) var digestFailures: [ByteRange] = []
  /// What the held bytes must still be proven to be before a byte is appended to them; nil
  /// once proven, or when they need no proof. Until then nothing is written, and a response
  /// that does not prove them ends the download with them left as they were.
  package internal(set) var pendingProof: PendingProof?
  /// The target is a stream (`StartPoint.stream`): this run may still resume a broken
  /// connection, a later one starts over.
  package internal(set) var streamed = false
  /// Bytes received over the network in this session.
  package internal(set) var received: Int64 = 0
  /// Bytes held when this session started (0 once the data starts over).
  package internal(set) var resumedFrom: Int64 = 0
  package internal(set) var nextTransfer: TransferID = 1
  var nextToken = 1
  var lastCheckpoint: UInt64 = 0
  /// How far the last checkpoint's state lagged when it became durable: the time its sync took
  /// (from being asked) plus the age of the bytes still on their way to the file at its
  /// snapshot. The next one starts that much earlier.
  var syncAllowance: UInt64 = 0
  /// The second part of the allowance, measured at the in-flight checkpoint's snapshot.
  var unwrittenAge: UInt64 = 0
  var checkpointInFlight = false
  /// Held bytes in the last state handed to the lane.
  var recordedHeld: Int64 = 0
  /// A new version was recorded without a state file (the `.part` file carries it): the
  /// first checkpoint writes one even if no byte came.
  var stateFileDue = false
  var lastProgress: UInt64 = 0
  var speed = SpeedMeter()
  /// How long the last request took from being asked for to its head (nanoseconds).
  var answerLatency: UInt64?
  var random: SeededRandom

  package init(_ configuration: Configuration) {
    self.configuration = configuration
    self.identity = ResumeState(url: configuration.recordedURL)
    self.budget = RetryBudget(policy: configuration.retry, maxRestarts: configuration.maxRestarts, held: 0)
    self.controller = ConnectionController(
      mode: configuration.connections, rateCap: configuration.rateLimit.map { Double($0) })
    self.random = SeededRandom(seed: configuration.randomSeed)
  }

  // MARK: - What is held

  /// Why a later run could not resume the bytes held, or nil when it can: that needs a
  /// server that serves ranges of a known size. Both the retry budget's last hint and the
  /// message of a stopped run say it from here.
  package var resumeObstacle: String? {
    if streamed { return "a stream is written as it comes and keeps nothing to resume from" }
    if !rangesSupported { return "the server cannot resume (it does not serve byte ranges)" }
    if identity.totalBytes == nil { return "the server cannot resume (it sent no size)" }
    return nil
  }

  /// Bytes in the file that belong to the download.
  package var heldBytes: Int64 {
    switch layout {
    case .unnamed: 0
    case .finished(let size): size
    case .stream(let stream): stream.written
    case .segmented(let planner): planner.writtenBytes
    }
  }

  /// Held bytes plus those received and on their way to the file: what progress shows.
  package var receivedBytes: Int64 {
    switch layout {
    case .unnamed, .finished: heldBytes
    case .stream(let stream): stream.reserved
    case .segmented(let planner): planner.receivedBytes
    }
  }

  /// How far the file is written without a gap from byte 0 (not counting ranges awaiting
  /// their digest check): what the whole-file hash may read.
  package var verifiedPrefix: Int64 {
    switch layout {
    case .unnamed, .finished: 0
    case .stream(let stream): stream.written
    case .segmented(let planner): planner.verifiedPrefix
    }
  }

  /// The state with the bytes written so far: what a checkpoint records.
  package var snapshot: ResumeState {
    var state = identity
    switch layout {
    case .unnamed, .finished: break
    case .stream(let stream): state.setContiguous(stream.written)
    case .segmented(let planner): state.ranges = planner.written
    }
    return state
  }

  package var progress: DownloadProgress {
    let connections: Int
    if case .running(let round) = phase {
      connections = max(1, round.transfers.count)
    } else {
      connections = 0
    }
    return DownloadProgress(
      bytes: receivedBytes, totalBytes: identity.totalBytes, bytesPerSecond: speed.bytesPerSecond,
      connections: connections)
  }

  package var summary: DownloadSummary {
    DownloadSummary(
      received: received, resumedFrom: resumedFrom, finalURL: identity.finalURL ?? configuration.recordedURL,
      bytesPerSecond: speed.bytesPerSecond)
  }

  // MARK: - Starting

  /// Starts the download from what the executor found at the target.
  package mutating func begin(_ start: StartPoint, now: UInt64) -> [DownloadAction] {
    guard case .idle = phase else { return [] }
    adopt(start)
    // The meter's first sample: the first progress shows a measured rate, not 0.
    speed.record(bytes: received, at: now)
    resumedFrom = heldBytes
    recordedHeld = heldBytes
    budget = RetryBudget(policy: configuration.retry, maxRestarts: configuration.maxRestarts, held: heldBytes)
    var actions: [DownloadAction] = []
    switch start {
    case .opened, .foreignPartial: actions.append(.advanceHashing(to: verifiedPrefix))
    case .unnamed, .finished, .stream: break
    }
    return actions + startRound(now: now)
  }

  /// Takes over the files' state (at the start, or when a response named the target).
  mutating func adopt(_ start: StartPoint) {
    switch start {
    case .unnamed:
      layout = .unnamed
    case .stream:
      streamed = true
      identity = ResumeState(url: configuration.recordedURL)
      layout = .stream(Stream(written: 0))
    case .finished(let record):
      identity = record
      layout = .finished(size: record.totalBytes ?? record.contiguousBytes)
    case .opened(let state), .foreignPartial(let state):
      identity = state
      identity.ranges = []
      pendingProof = PendingProof(start, recordedURL: configuration.recordedURL)
      if pendingProof?.movedFrom == nil { identity.url = configuration.recordedURL }
      if let total = state.totalBytes {
        layout = .segmented(
          SegmentPlanner(total: total, held: state.ranges, minimumSplit: configuration.minimumSplit))
        rangesSupported = true  // it served ranges to the run that saved this state
      } else {
        layout = .stream(Stream(written: state.contiguousBytes))
      }
    }
  }

  /// A new round: its first transfer, or the end when every byte is held.
  mutating func startRound(now: UInt64) -> [DownloadAction] {
    var round = Round(heldAtStart: heldBytes)
    let target: TransferPlan.Target
    switch layout {
    case .unnamed: target = .stream(from: 0)
    case .finished(let size): target = .checkFinished(size: size)
    case .stream(let stream): target = .stream(from: stream.written)
    case .segmented(var planner):
      // Between rounds nothing is assigned (a segment left over would be released here), so
      // no gap means every byte is held.
      for segment in planner.active { planner.release(segment.id) }
      guard let gap = planner.unassigned.first, !planner.isComplete else {
        phase = .ended
        return [.end(.complete(snapshot, summary))]
      }
      let segment = planner.open(gap.start, gap.end)
      layout = .segmented(planner)
      target = .segment(id: segment.id, start: segment.start, end: segment.end, total: planner.total)
    }
    let id = nextTransfer
    nextTransfer += 1
    let plan = makePlan(target, running: 1)
    round.transfers[id] = Transfer(plan: plan, state: .awaitingHead, startedAt: now)
    phase = .running(round)
    return [.startTransfer(id, plan)]
  }

  /// Held bytes asked for again when no strong validator binds them (issue 11): 64 KiB.
  package static let overlapLength: Int64 = 64 << 10

  /// The request for `target`: a `Range` from the first byte not held, with `If-Range`; or,
  /// when nothing can go in `If-Range` and held bytes end where the range begins, from up to
  /// `overlapLength` earlier, so the response proves it continues them.
  func makePlan(_ target: TransferPlan.Target, running: Int) -> TransferPlan {
    let ifRangeValue = ResourceIdentity(identity).ifRangeValue
    var range: String?
    var overlap: Int64 = 0
    switch target {
    case .stream(let from):
      // A moved URL with a size unknown has nothing else to prove the bytes by.
      if ifRangeValue == nil || pendingProof != nil { overlap = overlapBefore(from) }
      if from > 0 { range = "bytes=\(from - overlap)-" }
    case .checkFinished(size: let from):
      if from > 0 { range = "bytes=\(from)-" }
    case .segment(_, let start, let end, let total) where start > 0 || end < total || heldBytes > 0:
      if ifRangeValue == nil { overlap = overlapBefore(start) }
      // Open-ended for the tail, as any resume would ask; closed inside, so the connection can be reused.
      let first = start - overlap
      range = end == total ? "bytes=\(first)-" : "bytes=\(first)-\(end - 1)"
    case .segment:
      break
    }
    return TransferPlan(
      target: target, range: range, ifRange: range == nil ? nil : ifRangeValue,
      bufferSize: bufferSize(running: running), overlap: overlap)
  }

  /// How many written bytes directly precede `start`, up to `overlapLength`.
  func overlapBefore(_ start: Int64) -> Int64 {
    guard start > 0 else { return 0 }
    let run: Int64
    switch layout {
    case .unnamed, .finished: run = 0
    case .stream(let stream): run = start <= stream.written ? start : 0
    case .segmented(let planner):
      run = planner.written.first { $0.start < start && start <= $0.end }.map { start - $0.start } ?? 0
    }
    return min(Self.overlapLength, run)
  }

  /// A transfer's buffer, for libcurl's reads and for direct writes: 1 MiB for one or two
  /// connections (fewer, larger reads and writes cost less CPU), less with more (2 MiB of each
  /// kind shared out, 256 KiB at least), so memory stays small and flat. In automatic mode the
  /// first connection gets 1 MiB and those added later a share as if all of the cap ran.
  func bufferSize(running: Int) -> Int {
    let budget = 2 << 20
    let automaticCap: Int
    if case .automatic(let cap) = configuration.connections { automaticCap = cap } else { automaticCap = 1 }
    let connections = configuration.fixedConnections ?? (running <= 1 ? 1 : automaticCap)
    return max(256 << 10, min(1 << 20, budget / max(1, connections)))
  }

  // MARK: - Timer, pause, resume, cancel

  /// Timer tick (every ~50 ms): more connections when the controller wants them, and a
  /// progress event every `progressInterval`, also while no bytes arrive (a stall shows as a
  /// falling speed rather than a frozen line).
  package mutating func tick(now: UInt64) -> [DownloadAction] {
    guard case .running = phase else { return [] }
    var actions = addTransfersIfWanted(now: now)
    switch layout {
    case .unnamed, .finished: return actions
    case .stream, .segmented: break
    }
    // Bytes written since the last checkpoint are recorded on time even when no more arrive
    // (a stalled server); and a download that lasts gets its state file after one interval.
    if stateFileDue || heldBytes != recordedHeld { actions += checkpointIfDue(now: now) }
    if now &- lastProgress >= configuration.progressInterval {
      lastProgress = now
      speed.record(bytes: received, at: now)
      actions.append(.emit(.progress(progress)))
    }
    return actions
  }

  /// Grows the number of transfers when the controller wants more.
  mutating func addTransfersIfWanted(now: UInt64) -> [DownloadAction] {
    guard case .running(var round) = phase, round.state == .active, round.failures == 0,
      pendingProof == nil, case .segmented(var planner) = layout
    else { return [] }
    let useful = Int(min(Int64(64), planner.remainingBytes / max(1, configuration.minimumSplit)))
    let decision = controller.update(
      now: now, bytes: received, open: round.transferring, rangesSupported: rangesSupported,
      maximumUseful: useful, answerLatency: answerLatency)
    if decision.stepBack { return retire(keeping: decision.wanted) }
    var actions: [DownloadAction] = []
    while round.transfers.count < decision.wanted, let segment = planner.claim() {
      let id = nextTransfer
      nextTransfer += 1
      let plan = makePlan(
        .segment(id: segment.id, start: segment.cursor, end: segment.end, total: planner.total),
        running: round.transfers.count + 1)
      round.transfers[id] = Transfer(plan: plan, state: .awaitingHead, startedAt: now)
      actions.append(.startTransfer(id, plan))
    }
    layout = .segmented(planner)
    phase = .running(round)
    return actions
  }

  /// Stops transferring and makes everything received durable; `.paused` follows once it is.
  package mutating func pause(now: UInt64) -> [DownloadAction] {
    switch phase {
    case .running: return endRound(with: .paused, now: now)
    case .waitingToRetry:
      phase = .paused
      return [.checkpoint(snapshot, then: .paused(progress))]
    case .idle, .paused, .ended: return []
    }
  }

  /// Continues after `pause`: a new round.
  package mutating func resume(now: UInt64) -> [DownloadAction] {
    guard case .paused = phase else { return [] }
    return [.emit(.resumed)] + startRound(now: now)
  }

  /// Stops the download for good; the executor keeps or discards the partial.
  package mutating func cancel(keepPartial: Bool, now: UInt64) -> [DownloadAction] {
    switch phase {
    case .running: return endRound(with: .cancelled(keepPartial: keepPartial), now: now)
    case .idle, .waitingToRetry, .paused:
      phase = .ended
      return [.end(.interrupted(keepPartial: keepPartial, snapshot))]
    case .ended: return []
    }
  }

  /// The wait after a failed round is over: the next round.
  package mutating func retryDelayOver(token: Int, now: UInt64) -> [DownloadAction] {
    guard case .waitingToRetry(let waiting) = phase, waiting == token else { return [] }
    return startRound(now: now)
  }

  // MARK: - Checkpoints

  /// Whether a periodic checkpoint is due at `now`: one interval after the last, less how far
  /// the last one lagged (at most half an interval), so durable progress lags received bytes by
  /// about one interval: what a hard kill loses.
  package func checkpointDue(at now: UInt64) -> Bool {
    let interval = configuration.checkpointInterval
    return now &- lastCheckpoint >= interval - min(syncAllowance, interval / 2)
  }

  /// A periodic checkpoint, unless one is in flight (they coalesce: only the newest state matters).
  mutating func checkpointIfDue(now: UInt64) -> [DownloadAction] {
    guard !checkpointInFlight, checkpointDue(at: now) else { return [] }
    checkpointInFlight = true
    lastCheckpoint = now
    let state = snapshot
    recordedHeld = state.heldBytes
    stateFileDue = false
    unwrittenAge = arrivalTime(of: receivedBytes - state.heldBytes)
    return [.checkpoint(state, then: nil)]
  }

  /// The checkpoint is durable; it took `nanoseconds` from being asked.
  package mutating func checkpointDone(nanoseconds: UInt64) -> [DownloadAction] {
    checkpointInFlight = false
    syncAllowance = nanoseconds &+ unwrittenAge
    unwrittenAge = 0
    return []
  }

  /// How long `bytes` took to arrive at the measured speed (0 before there is one).
  func arrivalTime(of bytes: Int64) -> UInt64 {
    guard bytes > 0, speed.bytesPerSecond > 0 else { return 0 }
    return UInt64(min(Double(bytes) / speed.bytesPerSecond * 1e9, 1e12))
  }

  /// A checkpoint, or a commit of a new version, failed (disk full …): the download fails.
  package mutating func checkpointFailed(_ error: HaulError, now: UInt64) -> [DownloadAction] {
    checkpointInFlight = false
    return fail(error, now: now)
  }

  /// Something outside the machine failed for good (a file that cannot be opened or written).
  package mutating func fail(_ error: HaulError, now: UInt64) -> [DownloadAction] {
    switch phase {
    case .running: return endRound(with: .failed(error), now: now)
    case .waitingToRetry, .paused:
      phase = .ended
      return [.end(.failed(error, snapshot))]
    case .idle, .ended: return []
    }
  }

  // MARK: - Helpers for the other files

  mutating func newTransferID() -> TransferID {
    defer { nextTransfer += 1 }
    return nextTransfer
  }

  mutating func nextRetryToken() -> Int {
    defer { nextToken += 1 }
    return nextToken
  }

  mutating func jitter() -> Double { random.unit() }

}
