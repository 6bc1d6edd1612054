import HaulTestSupport
import Testing

@testable import HaulCore

/// Random event sequences through a scripted transport and a scripted I/O lane, checking
/// after every step: reservations never overlap, every state the machine records (and its
/// snapshot) claims only bytes on the model disk that are the right bytes of the version it
/// names (never a splice), and the live transfers are exactly those the transport runs.
/// Seeded: a failure names its seed and reproduces.
@Suite struct DownloadMachineFuzzTests {
  @Test(arguments: 0..<100)
  func randomRuns(_ seed: Int) throws {
    var run = Simulation(seed: UInt64(seed) &* 0x9E37_79B9 &+ 17, limitChanges: seed % 2 == 1)
    try run.go()
  }

  /// Automatic mode only, whose steps back cancel transfers in the middle of their segments
  /// and whose later tries (after a step back, a decline, or a lifted rate limit) add
  /// transfers again: the same invariants hold, and some runs do each (else this tests
  /// nothing). 120 runs: declined connections end fewer rounds, so fewer runs step back.
  @Test func automaticRunsThatStepBack() throws {
    var retired = 0
    var triedAgain = 0
    var afterALift = 0
    var declines = 0
    for seed in 0..<120 {
      var run = Simulation(
        seed: UInt64(seed) &* 0x2545_F491 &+ 3, automatic: true, limitChanges: seed % 2 == 1)
      try run.go()
      retired += run.retired.count
      triedAgain += run.stepsUpAfterAStepBack
      afterALift += run.stepsUpAfterALift
      if run.declined { declines += 1 }
    }
    #expect(retired > 0, "no transfer retired in 120 runs")
    #expect(triedAgain > 0, "no step up after a step back in 120 runs")
    #expect(afterALift > 0, "no step up after a lifted limit in 120 runs")
    #expect(declines > 0, "no connection declined in 120 runs")
  }
}

/// One download against a server that changes, lies and drops, with writes that land late.
struct Simulation {
  /// What the server says about its bytes; byte `i` of version `v` is `(v, i)`.
  struct Source: Equatable {
    var version: Int
    var offset: Int64
  }

  struct Transfer {
    var plan: TransferPlan
    var headSent = false
    var disposition = BodyDisposition.deliver
    /// The bytes the response carries: version and first source offset; how many are sent.
    var version = 0
    var first: Int64 = 0
    var count: Int64 = 0
    var sent: Int64 = 0
    /// The response cuts after this many body bytes (nil: complete).
    var cutAfter: Int64?
    var cancelled = false
    var aborted = false
    /// Received, not yet handed to the lane (a transfer's filling block).
    var staged: [LaneWork] = []
    var ending = false
  }

  enum LaneWork {
    case write(TransferID, offset: Int64, sources: [Source])
    case commit(ResumeState, truncatingTo: Int64?)
    case checkpoint(ResumeState)
    case ended(TransferID, TransportFailure?)
  }

  var random: SplitMix64
  var machine: DownloadMachine
  let size: Int64
  /// Whether the server sends an ETag; without, resumes are checked by their overlap.
  let validators: Bool
  var version = 0
  var disk: [Source?]
  var transfers: [TransferID: Transfer] = [:]
  var lane: [LaneWork] = []
  var timers: [Int] = []
  var now: UInt64 = 1
  var ended: DownloadEnding?
  var steps = 0
  let seed: UInt64

  /// Transfers seen cancelled by a step back of the connection controller.
  var retired: Set<TransferID> = []
  /// Steps up of the controller once some transfers were retired: growth tried again.
  var stepsUpAfterAStepBack = 0
  /// Whether the server declined a connection beside one delivering (`connectionDeclined`).
  var declined = false
  /// Steps up of the controller after the rate limit was lifted (until it is set again).
  var stepsUpAfterALift = 0
  private var lifted = false
  private var lastTarget = 1

  /// Whether the rate limit changes during the run (half the runs: a limit every step reaches
  /// makes fewer steps back).
  let limitChanges: Bool

  init(seed: UInt64, automatic: Bool = false, limitChanges: Bool = false) {
    self.seed = seed
    self.limitChanges = limitChanges
    var random = SplitMix64(seed: seed)
    size = Int64(1 + Int.random(in: 0..<12_000, using: &random))
    validators = Int.random(in: 0..<3, using: &random) != 0
    var connections: Int? = Bool.random(using: &random) ? nil : Int.random(in: 1...4, using: &random)
    if automatic { connections = nil }
    var configuration = DownloadMachine.Configuration(
      recordedURL: "http://h/f", fixedConnections: connections, automaticCap: 4,
      retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.1, maxAttemptsWithoutProgress: 6),
      minimumSplit: Int64(Int.random(in: 128...2_048, using: &random)), checkpointInterval: 3_000_000,
      progressInterval: 2_000_000, randomSeed: seed)
    // Halves smaller than the minimum split at the end, as a slow connection that answers at
    // once takes them (from the seed, leaving the scenario's random draws as they were).
    configuration.smallestSteal = Int64(1 + seed % 128)
    machine = DownloadMachine(configuration)
    // Windows of a few steps, so automatic mode steps up, and back (cancelling transfers
    // mid-segment), within these small downloads.
    machine.controller.baselineSlice = 500_000
    machine.controller.earlyWindow = 500_000
    machine.controller.shortestWindow = 1_000_000
    machine.controller.window = 2_000_000
    machine.controller.reprobeDelay = 4_000_000
    machine.controller.longestReprobeDelay = 16_000_000
    machine.controller.liftSettle = 1_000_000
    // No step ever pays: every judged step is undone, cancelling transfers mid-segment.
    if automatic { machine.controller.minimumGain = 1_000 }
    disk = []
    self.random = random
  }

  static func etag(_ version: Int) -> String { "\"v\(version)\"" }

  mutating func go() throws {
    // Sometimes a partial of version 0 from an earlier session.
    var start = ResumeState(url: "http://h/f")
    if Bool.random(using: &random) {
      let held = Int64.random(in: 0...size, using: &random)
      disk = (0..<Int(held)).map { Source(version: 0, offset: Int64($0)) }
      start = ResumeState(
        url: "http://h/f", totalBytes: size, etag: validators ? Self.etag(0) : nil,
        ranges: held > 0 ? [ByteRange(start: 0, end: held)] : [])
    }
    // Sometimes another tool's partial (`--continue`): no validator, no size, to be proven.
    let foreign = !start.ranges.isEmpty && Bool.random(using: &random)
    if foreign { start = ResumeState(url: "http://h/f", ranges: start.ranges) }
    let before = disk
    perform(machine.begin(foreign ? .foreignPartial(start) : .opened(start), now: now))
    while ended == nil, steps < 20_000 {
      steps += 1
      now += UInt64.random(in: 0...2_000_000, using: &random)
      // Every 20 steps the strictest rate limit changes, as the executor passes it on: for 10
      // steps one that every step reaches (growth stops), then none (growth is tried again).
      if limitChanges, steps % 10 == 0 {
        let cap: Double? = steps % 20 == 0 ? nil : 1
        if machine.rateCap != cap {
          lifted = cap == nil
          machine.rateLimitChanged(to: cap, now: now)
        }
      }
      step()
      try check()
    }
    // Settle: the lane finishes, transfers end, timers fire, until the download ends.
    while ended == nil, steps < 40_000 {
      steps += 1
      now += 1_000_000
      if !lane.isEmpty {
        runLane()
      } else if let id = transfers.keys.min() {
        endTransfer(id)
      } else if let token = timers.first {
        timers.removeFirst()
        perform(machine.retryDelayOver(token: token, now: now))
      } else {
        perform(machine.tick(now: now))
        if ended == nil, transfers.isEmpty, lane.isEmpty, timers.isEmpty {
          perform(machine.cancel(keepPartial: true, now: now))
        }
      }
      try check()
    }
    let ending = try #require(ended, "seed \(seed): never ended")
    switch ending {
    case .complete(let state, _):
      let total = state.totalBytes ?? Int64(disk.count)
      var whole = state
      whole.setContiguous(total)
      try claims(whole, "the finished file")
    case .failed(let error, let state) where error.underlying is UnprovenPartial:
      // Refused before the bytes were proven: the partial is as it was.
      #expect(foreign && disk == before, "seed \(seed): a refused partial was written to")
      try claims(state, "the state kept at the end")
    case .failed(_, let state), .interrupted(_, let state):
      try claims(state, "the state kept at the end")
    case .alreadyComplete:
      break
    }
  }

  mutating func step() {
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<45: if let id = transfers.keys.sorted().shuffled(using: &random).first { advance(id) }
    case 45..<75: runLane()
    case 75..<85: perform(machine.tick(now: now))
    case 85..<88: perform(machine.pause(now: now))
    case 88..<93: perform(machine.resume(now: now))
    case 93..<96:
      if let token = timers.popLast() { perform(machine.retryDelayOver(token: token, now: now)) }
    case 96..<98:
      version += 1  // the file changes on the server (same size)
    default:
      if Int.random(in: 0..<20, using: &random) == 0 { perform(machine.cancel(keepPartial: true, now: now)) }
    }
  }

  // MARK: - The scripted transport

  mutating func advance(_ id: TransferID) {
    guard var transfer = transfers[id], !transfer.ending else { return }
    if transfer.cancelled || transfer.aborted {
      endTransfer(id)
      return
    }
    if !transfer.headSent {
      transfer.headSent = true
      transfers[id] = transfer
      respond(id)
      return
    }
    let left = min(transfer.count, transfer.cutAfter ?? transfer.count) - transfer.sent
    guard left > 0, transfer.disposition == .deliver else {
      endTransfer(id)
      return
    }
    let count = Int(min(left, Int64.random(in: 1...3_000, using: &random)))
    switch machine.receiveBody(id, count: count, now: now) {
    case .stale:
      transfer.aborted = true
    case .compare(let offset, let taken, let last):
      // The overlap: the bytes sent again against those on the disk.
      let matched = (0..<Int64(taken)).allSatisfy {
        let at = Int(offset + $0)
        return at < disk.count
          && disk[at] == Source(version: transfer.version, offset: transfer.first + transfer.sent + $0)
      }
      transfer.sent += Int64(taken)
      if !matched { transfer.aborted = true }
      transfers[id] = transfer
      if !matched || last { perform(machine.overlapChecked(id, matched: matched, now: now)) }
      return
    case .write(let offset, let taken, _, let flushDue, let stopAfter):
      let sources = (0..<Int64(taken)).map {
        Source(version: transfer.version, offset: transfer.first + transfer.sent + $0)
      }
      if taken > 0 { transfer.staged.append(.write(id, offset: offset, sources: sources)) }
      transfer.sent += Int64(count)
      if flushDue || Bool.random(using: &random) {
        lane += transfer.staged
        transfer.staged = []
      }
      if stopAfter { transfer.aborted = true }
    }
    transfers[id] = transfer
  }

  /// The head of a response: honest mostly; sometimes an error, a whole file to a range, a
  /// wrong offset, or a cut.
  mutating func respond(_ id: TransferID) {
    guard var transfer = transfers[id] else { return }
    let plan = transfer.plan
    var status = 200
    var range: ContentRange?
    var first: Int64 = 0
    var last = size - 1
    let roll = Int.random(in: 0..<100, using: &random)
    if let header = plan.range, roll >= 8 {
      let bounds = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
      first = Int64(bounds[0]) ?? 0
      last = min(size - 1, Int64(bounds.count > 1 ? bounds[1] : "") ?? size - 1)
      if first >= size {
        status = 416
        range = .unsatisfied(total: size)
      } else if plan.ifRange != nil && plan.ifRange != Self.etag(version) {
        first = 0
        last = size - 1  // If-Range did not match: the whole new version
      } else {
        status = 206
        // Now and then a server that labels the bytes wrongly.
        let shift: Int64 = roll < 12 ? Int64.random(in: -5...5, using: &random) : 0
        range = .range(first: first + shift, last: last + shift, total: size)
      }
    }
    if roll >= 92 { status = [500, 503, 404][Int.random(in: 0..<3, using: &random)] }
    let count = status == 200 || status == 206 ? last - first + 1 : 0
    let facts = ResponseFacts(
      summary: ResponseSummary(
        status: status, contentRange: range, contentLength: count, etag: validators ? Self.etag(version) : nil
      ),
      finalURL: "http://h/f", suggestedName: "f", acceptsRanges: true)
    guard case .decided(let disposition, _, let actions) = machine.receiveHead(id, facts, now: now) else {
      Issue.record("seed \(seed): asked to name a target that was open")
      return
    }
    transfer.disposition = disposition
    transfer.version = version
    transfer.first = first
    transfer.count = count
    if Int.random(in: 0..<6, using: &random) == 0 {
      transfer.cutAfter = Int64.random(in: 0...max(0, count), using: &random)
    }
    if disposition == .abort { transfer.aborted = true }
    transfers[id] = transfer
    perform(actions)
  }

  /// The transfer's end reaches the machine after its last write, through the lane.
  mutating func endTransfer(_ id: TransferID) {
    guard var transfer = transfers[id], !transfer.ending else { return }
    transfer.ending = true
    let failure: TransportFailure?
    if transfer.cancelled {
      failure = TransportFailure(kind: .cancelled, message: "cancelled", code: 42)
    } else if transfer.aborted || transfer.disposition == .abort {
      failure = TransportFailure(kind: .aborted, message: "aborted", code: 23)
    } else if !transfer.headSent {
      // Refused: beside a transfer that delivers, a declined connection (a per-client limit);
      // timed out: a failure of the round.
      failure =
        Bool.random(using: &random)
        ? TransportFailure(kind: .connect, message: "refused", code: 7)
        : TransportFailure(kind: .timedOut, message: "no answer", code: 28)
    } else if let cut = transfer.cutAfter, cut < transfer.count {
      failure = TransportFailure(kind: .interrupted, message: "cut", code: 18)
    } else {
      failure = nil
    }
    if machine.keepsStagedBytes(id) { lane += transfer.staged }
    transfer.staged = []
    transfers[id] = transfer
    lane.append(.ended(id, failure))
  }

  // MARK: - The scripted lane

  mutating func runLane() {
    guard !lane.isEmpty else { return }
    let work = lane.removeFirst()
    switch work {
    case .write(let id, let offset, let sources):
      let end = Int(offset) + sources.count
      if disk.count < end { disk += [Source?](repeating: nil, count: end - disk.count) }
      for (index, source) in sources.enumerated() { disk[Int(offset) + index] = source }
      perform(machine.written(id, through: Int64(end), now: now))
    case .commit(let state, let length):
      if let length { disk = Array(disk.prefix(Int(length))) }
      record(state)
    case .checkpoint(let state):
      record(state)
      perform(machine.checkpointDone(nanoseconds: 1_000))
    case .ended(let id, let failure):
      transfers[id] = nil
      perform(machine.transferEnded(id, failure: failure, now: now))
    }
  }

  var recordFailures: [String] = []

  mutating func record(_ state: ResumeState) {
    do { try claims(state, "a recorded state") } catch { recordFailures.append("\(error)") }
  }

  mutating func perform(_ actions: [DownloadAction]) {
    for action in actions {
      switch action {
      case .startTransfer(let id, let plan):
        if transfers[id] != nil { Issue.record("seed \(seed): transfer \(id) started twice") }
        transfers[id] = Transfer(plan: plan)
      case .cancelTransfers(let ids):
        for id in ids { transfers[id]?.cancelled = true }
      case .commit(let state, let length): lane.append(.commit(state, truncatingTo: length))
      case .checkpoint(let state, _): lane.append(.checkpoint(state))
      case .scheduleRetry(_, let token): timers.append(token)
      case .end(let ending): ended = ending
      case .restartHashing, .advanceHashing, .announceStart, .emit: break
      }
    }
  }

  // MARK: - Invariants

  struct Broken: Error, CustomStringConvertible { let description: String }

  /// `state` claims only bytes on the disk that are its version's, at their own offsets.
  func claims(_ state: ResumeState, _ what: String) throws {
    for range in state.ranges {
      for offset in range.start..<range.end {
        let byte = offset < Int64(disk.count) ? disk[Int(offset)] : nil
        guard let byte, byte.offset == offset, state.etag == nil || Self.etag(byte.version) == state.etag
        else {
          throw Broken(
            description:
              "seed \(seed), step \(steps): \(what) claims byte \(offset) but the disk has \(String(describing: byte)) (state \(state))"
          )
        }
      }
    }
  }

  mutating func check() throws {
    if case .running(let round) = machine.phase {
      retired.formUnion(round.transfers.filter { $0.value.retired }.keys)
    }
    if machine.controller.serverLimit != nil { declined = true }
    if machine.controller.target > lastTarget, !retired.isEmpty { stepsUpAfterAStepBack += 1 }
    if machine.controller.target > lastTarget, lifted { stepsUpAfterALift += 1 }
    lastTarget = machine.controller.target
    if let failure = recordFailures.first { throw Broken(description: failure) }
    try claims(machine.snapshot, "the snapshot")
    if case .segmented(let planner) = machine.layout {
      let spans = (planner.held + planner.active.map { ByteRange(start: $0.start, end: $0.end) }).sorted {
        $0.start < $1.start
      }
      for (a, b) in zip(spans, spans.dropFirst()) where a.end > b.start {
        throw Broken(description: "seed \(seed), step \(steps): overlapping ranges \(a) and \(b)")
      }
      for segment in planner.active
      where
        !(segment.start <= segment.cursor && segment.cursor <= segment.reserved
        && segment.reserved <= segment.end)
      {
        throw Broken(description: "seed \(seed), step \(steps): segment out of order \(segment)")
      }
    }
    let live: Int
    if case .running(let round) = machine.phase {
      live = round.transfers.count
      // A superseded transfer may wait for its end beside the one that replaced it.
      let kept = round.transfers.values.count { !$0.retired && $0.state != .superseded }
      if kept > machine.controller.target {
        throw Broken(
          description:
            "seed \(seed), step \(steps): \(kept) transfers not retired, \(machine.controller.target) wanted")
      }
    } else {
      live = 0
    }
    if live != transfers.count {
      throw Broken(
        description:
          "seed \(seed), step \(steps): the machine counts \(live) transfers, the transport runs \(transfers.count)"
      )
    }
  }
}
