/// Body bytes, their writes, and the ends of transfers and rounds.
extension DownloadMachine {
  // MARK: - Bytes

  /// Body bytes arrived: reserve where they go, so no other transfer is given them meanwhile.
  package mutating func receiveBody(_ id: TransferID, count: Int, now: UInt64) -> BodySlot {
    guard case .running(var round) = phase, round.state == .active, var transfer = round.transfers[id] else {
      return .stale
    }
    if case .checkingOverlap(let segment, let remaining) = transfer.state {
      guard remaining > 0 else { return .stale }
      let count = min(Int64(count), remaining)
      transfer.state = .checkingOverlap(segment: segment, remaining: remaining - count)
      transfer.received += count
      received += count
      round.transfers[id] = transfer
      phase = .running(round)
      return .compare(
        offset: transfer.plan.dataStart - remaining, count: Int(count), last: remaining == count)
    }
    let flushDue = checkpointDue(at: now)
    let slot: BodySlot
    switch (transfer.state, layout) {
    case (.writingStream, .stream(var stream)) where stream.owner == id:
      slot = .write(
        offset: stream.reserved, count: count, hashInline: true, flushDue: flushDue, stopAfter: false)
      stream.reserved += Int64(count)
      layout = .stream(stream)
    case (.writingSegment(let segment), .segmented(var planner)):
      // In place: a copy would copy the plan's arrays on every chunk.
      guard let reservation = planner.reserve(segment, upTo: Int64(count)) else { return .stale }
      let full = planner.isFullyReserved(segment)
      slot = .write(
        offset: reservation.offset, count: Int(reservation.count), hashInline: !reservation.pinned,
        flushDue: flushDue, stopAfter: full && reservation.count < Int64(count))
      if full { transfer.state = .segmentFilled(segment) }
      layout = .segmented(planner)
    default:
      return .stale
    }
    if case .write(_, let taken, _, _, _) = slot {
      transfer.received += Int64(taken)
      received += Int64(taken)
    }
    round.transfers[id] = transfer
    phase = .running(round)
    return slot
  }

  /// The executor compared the overlap (`BodySlot.compare`): at the first difference
  /// (`matched` false) the resource changed and the data starts over; once all of it matched,
  /// the transfer writes what follows.
  package mutating func overlapChecked(_ id: TransferID, matched: Bool, now: UInt64) -> [DownloadAction] {
    guard case .running(var round) = phase, round.state == .active, var transfer = round.transfers[id],
      case .checkingOverlap(let segment, let remaining) = transfer.state
    else { return [] }
    guard matched else {
      let why = "the bytes from \(transfer.plan.offset) it sent differ from those held"
      if let proof = pendingProof { return endRound(with: .failed(proof.failure(why)), now: now) }
      let reason =
        "the file on the server changed (the bytes from \(transfer.plan.offset) it sent again differ "
        + "from those held, and it gives no validator to tell versions apart)"
      return endRound(with: .restart(reason: reason), now: now)
    }
    guard remaining == 0 else { return [] }
    transfer.state = segment.map { .writingSegment($0) } ?? .writingStream
    round.transfers[id] = transfer
    phase = .running(round)
    guard pendingProof != nil else { return [] }
    proven()
    return addTransfersIfWanted(now: now)
  }

  /// The file now holds the transfer's reserved bytes up to `through` (its writes completed).
  package mutating func written(_ id: TransferID, through: Int64, now: UInt64) -> [DownloadAction] {
    guard case .running(let round) = phase, let transfer = round.transfers[id] else { return [] }
    switch (transfer.state, layout) {
    case (.writingStream, .stream(var stream)) where stream.owner == id:
      stream.written = min(max(stream.written, through), stream.reserved)
      layout = .stream(stream)
    case (.writingSegment(let segment), .segmented(var planner)),
      (.segmentFilled(let segment), .segmented(var planner)):
      planner.markWritten(segment, through: through)
      layout = .segmented(planner)
    default:
      return []
    }
    return [.advanceHashing(to: verifiedPrefix)] + checkpointIfDue(now: now)
  }

  /// A write of the transfer failed: its unwritten bytes are given back and the download fails.
  package mutating func writeFailed(_ id: TransferID, _ error: HaulError, now: UInt64) -> [DownloadAction] {
    guard case .running(let round) = phase, let transfer = round.transfers[id] else { return [] }
    switch (transfer.state, layout) {
    case (.writingStream, .stream(var stream)) where stream.owner == id:
      stream.reserved = stream.written
      layout = .stream(stream)
    case (.writingSegment(let segment), .segmented(var planner)),
      (.segmentFilled(let segment), .segmented(var planner)):
      planner.commitReservation(segment, succeeded: false)
      layout = .segmented(planner)
    default:
      break
    }
    return endRound(with: .failed(error), now: now)
  }

  /// Whether the bytes a transfer still holds (received, not written) are wanted where they
  /// were reserved; a replaced or discarded range drops them.
  package func keepsStagedBytes(_ id: TransferID) -> Bool {
    guard case .running(let round) = phase, let transfer = round.transfers[id] else { return false }
    switch transfer.state {
    case .writingStream, .writingSegment, .segmentFilled: return true
    case .awaitingHead, .checkingOverlap, .retryLater, .superseded: return false
    }
  }

  // MARK: - Limits

  /// The strictest rate limit on the download, as the controller knows it.
  package var rateCap: Double? { controller.rateCap }

  /// The strictest rate limit changed while the download runs (a shared limit set from
  /// elsewhere; the executor looks at every tick, and passes a change on before the tick).
  /// Lifting it lets automatic mode add connections within a second rather than at its next
  /// try, or never; the tick that follows adds them.
  package mutating func rateLimitChanged(to bytesPerSecond: Double?, now: UInt64) {
    controller.changeRateCap(to: bytesPerSecond, now: now)
  }

  // MARK: - Ends of transfers

  /// A transfer ended and all its writes completed. `failure` is nil when the response was
  /// received completely; `mismatch`: the complete response failed its `Content-Digest`, its
  /// bytes are discarded and fetched again, once.
  package mutating func transferEnded(
    _ id: TransferID, failure: TransportFailure?, mismatch: RangeDigestMismatch? = nil, now: UInt64
  ) -> [DownloadAction] {
    guard case .running(var round) = phase, let transfer = round.transfers.removeValue(forKey: id) else {
      return []
    }
    if case .checkFinished = transfer.plan.target, case .active = round.state, let failure,
      failure.kind != .cancelled
    {
      // The server could not be asked about a complete file: it stays complete, unchecked,
      // without retries (nothing is missing).
      phase = .running(round)
      return endRound(
        with: .alreadyComplete(changed: false, notChecked: Self.error(for: failure).message), now: now)
    }
    var actions: [DownloadAction] = []
    var refetch: RetryNotice?
    var mayContinue = false
    // A connection added to those delivering that failed before its response: declined, as a
    // `503` to it is (`declined`).
    let declined =
      transfer.state == .awaitingHead && round.state == .active
      && failure.map(Self.isDeclinedConnection) == true
      && Self.delivering(round, besides: id) > 0
    if declined {
      noteDeclined(id, in: round, now: now)
      if let segment = Self.segment(of: transfer) { giveBack(segment, in: round) }
    }
    switch layout {
    case .segmented(var planner):
      // Whatever its response was, the transfer's segment ends with it: its written part is
      // held, the rest free for others (ids never repeat across plans, so one of a replaced
      // plan is simply not there).
      if let segment = Self.segment(of: transfer) {
        if mismatch != nil { planner.discard(segment) } else { planner.release(segment) }
      }
      layout = .segmented(planner)
      mayContinue =
        Self.segment(of: transfer) != nil && (failure == nil || isFilled(transfer)) && !transfer.retired
        && !declined
    case .stream(var stream) where stream.owner == id:
      stream.owner = nil
      stream.reserved = stream.written
      layout = .stream(stream)
    case .unnamed, .finished, .stream:
      break
    }
    phase = .running(round)
    if let mismatch {
      if digestFailures.contains(where: { $0.start < mismatch.range.end && mismatch.range.start < $0.end }) {
        return endRound(with: .failed(mismatch.error(again: true)), now: now)
      }
      digestFailures.append(mismatch.range)
      refetch = RetryNotice(attempt: 1, maxAttempts: 2, delay: 0, reason: mismatch.error(again: false))
    }
    if case .active = round.state, !declined { actions += classify(transfer, failure: failure, now: now) }
    // The round may have ended for all meanwhile.
    guard case .running(var current) = phase else { return actions }
    if case .active = current.state, mayContinue, current.failures == 0,
      case .segmented(var planner) = layout,
      let segment = planner.claim(smallestHalf: smallestStolenHalf(running: current.transferring))
    {
      // The transfer's connection takes the next range (work stealing).
      let next = newTransferID()
      let plan = makePlan(
        .segment(id: segment.id, start: segment.cursor, end: segment.end, total: planner.total),
        running: current.transfers.count + 1)
      current.transfers[next] = Transfer(plan: plan, state: .awaitingHead, startedAt: now)
      layout = .segmented(planner)
      if let refetch { actions.append(.emit(.retrying(refetch))) }
      actions.append(.startTransfer(next, plan))
    } else if let refetch {
      // No next range from here: the next round fetches it again (and says so).
      current.noteFailure(refetch.reason, retryAfter: 0, unreached: false)
    }
    phase = .running(current)
    if current.transfers.isEmpty { actions += finishRound(now: now) }
    return actions
  }

  /// The controller stepped back: all but the `count` transfers nearest the file's start (which
  /// the whole-file hash follows without reading bytes back) are cancelled. Their written
  /// bytes stay held and the rest of their segments goes back to the plan, for the remaining
  /// transfers to take in order; they take no new range themselves (`Transfer.retired`).
  mutating func retire(keeping count: Int) -> [DownloadAction] {
    guard case .running(var round) = phase, case .segmented(let planner) = layout else { return [] }
    let starts = Dictionary(uniqueKeysWithValues: planner.active.map { ($0.id, $0.start) })
    let live = round.transfers.filter { !$0.value.retired }.map { id, transfer in
      (id: id, start: Self.segment(of: transfer).flatMap { starts[$0] } ?? transfer.plan.offset)
    }
    let surplus = live.sorted { ($0.start, $0.id) < ($1.start, $1.id) }.dropFirst(max(1, count)).map(\.id)
    guard !surplus.isEmpty else { return [] }
    for id in surplus { round.transfers[id]?.retired = true }
    phase = .running(round)
    return [.cancelTransfers(surplus.sorted())]
  }

  /// Failures a server gives a connection it will not take (refused, or reset before any
  /// answer). Not a time-out: that may be a slow network as well.
  static func isDeclinedConnection(_ failure: TransportFailure) -> Bool {
    switch failure.kind {
    case .connect, .interrupted: true
    case .timedOut, .cancelled, .other, .aborted, .resolve, .tls, .hostKey, .tooManyRedirects, .badURL,
      .redirectRefused,
      .malformedResponse:
      false
    }
  }

  /// The smallest half of a range a connection that finished its own may take over. Worth it
  /// when the new request starts delivering well before the connection fetching it would have
  /// got there: at least twice what a connection receives while a request is answered. On a
  /// slow connection that answers at once (a server that paces each connection) that is far
  /// less than `minimumSplit`, so the last connections end together; never more than it, and
  /// never under `smallestSteal` (64 KiB). Without a measured speed or answer, `minimumSplit`.
  func smallestStolenHalf(running: Int) -> Int64 {
    let minimum = configuration.minimumSplit
    guard let latency = answerLatency, speed.bytesPerSecond > 0 else { return minimum }
    let perConnection = speed.bytesPerSecond / Double(max(1, running))
    let worth = perConnection * Double(latency) / 1e9 * 2
    return min(minimum, max(configuration.smallestSteal, Int64(min(worth, Double(minimum)))))
  }

  /// The segment a transfer writes, or was planned to write.
  static func segment(of transfer: Transfer) -> Int? {
    switch transfer.state {
    case .writingSegment(let id), .segmentFilled(let id), .checkingOverlap(segment: let id?, _): return id
    case .awaitingHead, .writingStream, .checkingOverlap, .retryLater, .superseded:
      if case .segment(let id, _, _, _) = transfer.plan.target { return id }
      return nil
    }
  }

  private func isFilled(_ transfer: Transfer) -> Bool {
    if case .segmentFilled = transfer.state { return true }
    return false
  }

  /// What a transfer's end means for the round: nothing, a failure for now, or the end of all.
  private mutating func classify(_ transfer: Transfer, failure: TransportFailure?, now: UInt64)
    -> [DownloadAction]
  {
    switch transfer.state {
    case .retryLater(let error, let retryAfter):
      noteFailure(error, retryAfter: retryAfter, unreached: false)
      return []
    case .superseded, .segmentFilled:
      return []
    case .awaitingHead, .writingStream, .writingSegment, .checkingOverlap:
      break
    }
    if case .checkingOverlap = transfer.state, failure == nil {
      noteFailure(
        HaulError(.protocol, "the response ended before the bytes it was asked for again"), retryAfter: nil,
        unreached: false)
      return []
    }
    guard let failure else {
      // A whole response: a stream of unknown size ends here; a segment may have come up short.
      guard case .writingStream = transfer.state, case .stream(let stream) = layout else {
        if case .writingSegment = transfer.state, transfer.received == 0 {
          noteFailure(
            HaulError(.protocol, "the server sent an empty response to a range request"), retryAfter: nil,
            unreached: false)
        }
        return []
      }
      guard let total = identity.totalBytes, total != stream.written else {
        identity.totalBytes = stream.written
        return endRound(with: .completed, now: now)
      }
      noteFailure(
        HaulError(
          .network,
          "the connection ended after \(ByteQuantity.format(stream.written)) of \(ByteQuantity.format(total))"
        ),
        retryAfter: nil, unreached: false)
      return []
    }
    switch failure.kind {
    case .cancelled:
      // Only the engine cancels; a cancelled transfer whose round goes on was superseded.
      return []
    case .connect, .interrupted, .timedOut, .other:
      let unreached = failure.kind == .connect && transfer.received == 0
      noteFailure(Self.error(for: failure), retryAfter: nil, unreached: unreached)
      return []
    case .aborted, .resolve, .tls, .hostKey, .tooManyRedirects, .badURL, .redirectRefused, .malformedResponse:
      return endRound(with: .failed(Self.error(for: failure)), now: now)
    }
  }

  private mutating func noteFailure(_ error: HaulError, retryAfter: Double?, unreached: Bool) {
    guard case .running(var round) = phase else { return }
    round.noteFailure(error, retryAfter: retryAfter, unreached: unreached)
    phase = .running(round)
  }

  /// The error a transport failure stands for.
  package static func error(for failure: TransportFailure) -> HaulError {
    switch failure.kind {
    case .connect: HaulError(.network, "cannot connect: \(failure.message)", underlying: failure)
    case .resolve:
      HaulError(
        .network, "cannot resolve the host name: \(failure.message)",
        hint: "check the URL's host name and the network", underlying: failure)
    case .interrupted: HaulError(.network, "the connection broke: \(failure.message)", underlying: failure)
    case .timedOut:
      HaulError(
        .network, "timed out: \(failure.message)", hint: LibraryWording.raiseTimeout,
        underlying: failure)
    case .tls:
      HaulError(
        .tls, "TLS failed: \(failure.message)",
        hint: LibraryWording.skipCertificateCheck,
        underlying: failure)
    case .hostKey:
      // The message says which key, where known_hosts is and how to add a key once checked.
      HaulError(
        .tls, failure.message, hint: LibraryWording.skipHostKeyCheck, underlying: failure)
    case .tooManyRedirects:
      HaulError(.protocol, "too many redirects: \(failure.message)", underlying: failure)
    case .badURL: HaulError(.invalidInput, "unusable URL: \(failure.message)", underlying: failure)
    case .redirectRefused:
      // The URL given was fine (not exit 2): the server sent it where haul will not go.
      HaulError(
        .protocol, failure.message,
        hint: "if you trust it, download the URL it redirects to (its Location header) directly",
        underlying: failure)
    case .malformedResponse:
      HaulError(.protocol, "the server's reply is not valid HTTP: \(failure.message)", underlying: failure)
    case .aborted, .cancelled, .other: HaulError(.network, failure.message, underlying: failure)
    }
  }

  // MARK: - Ends of rounds

  /// Ends the round for every transfer (the first reason wins) and cancels the transfers;
  /// the round finishes once the last one has ended.
  mutating func endRound(with end: RoundEnd, now: UInt64) -> [DownloadAction] {
    guard case .running(var round) = phase else { return [] }
    guard case .active = round.state else { return [] }
    // The transfers keep their ranges: bytes already received still count once written.
    round.state = .ending(end)
    let running = round.transfers.keys.sorted()
    phase = .running(round)
    if running.isEmpty { return finishRound(now: now) }
    return [.cancelTransfers(running)]
  }

  /// How a round whose transfers have all ended came out.
  package static func outcome(of round: Round, complete: Bool, held: Int64) -> RoundEnd {
    if case .ending(let end) = round.state { return end }
    if complete { return .completed }
    let error =
      round.lastError
      ?? HaulError(.network, "the connections ended with \(ByteQuantity.format(held)) of the file")
    return .transient(error, retryAfter: round.lastRetryAfter)
  }

  /// The last transfer of the round ended: what comes next.
  private mutating func finishRound(now: UInt64) -> [DownloadAction] {
    guard case .running(let round) = phase, round.transfers.isEmpty else { return [] }
    var complete = false
    if case .segmented(let planner) = layout { complete = planner.isComplete }
    switch Self.outcome(of: round, complete: complete, held: heldBytes) {
    case .completed:
      phase = .ended
      return [.end(.complete(snapshot, summary))]
    case .alreadyComplete(let changed, let notChecked):
      phase = .ended
      return [.end(.alreadyComplete(changed: changed, notChecked: notChecked, identity))]
    case .replan:
      return startRound(now: now)
    case .restart(let reason):
      if let error = cannotStartOver(reason) ?? budget.restarted(reason) {
        phase = .ended
        return [.end(.failed(error, snapshot))]
      }
      // Start over from byte 0, asking for the whole file: the server's ranges are not trusted.
      identity = ResumeState(url: configuration.recordedURL)
      layout = .stream(Stream(written: 0))
      resumedFrom = 0
      rangesDistrusted = true
      rangesSupported = false
      recordedHeld = 0
      stateFileDue = true
      let actions: [DownloadAction] = [
        .emit(.restarted(reason: reason)), .restartHashing(announced: nil),
        .commit(snapshot, truncatingTo: 0),
      ]
      return actions + startRound(now: now)
    case .transient(let error, let retryAfter):
      let decision = budget.roundFailed(
        error, retryAfter: retryAfter, held: heldBytes, unreached: round.onlyUnreached, jitter: random.unit(),
        cannotResume: resumeObstacle)
      switch decision {
      case .giveUp(let error):
        phase = .ended
        return [.end(.failed(error, snapshot))]
      case .retry(let notice):
        let token = nextRetryToken()
        phase = .waitingToRetry(token: token)
        return [
          .checkpoint(snapshot, then: nil), .emit(.retrying(notice)),
          .scheduleRetry(after: notice.delay, token: token),
        ]
      }
    case .failed(let error):
      phase = .ended
      return [.end(.failed(error, snapshot))]
    case .paused:
      phase = .paused
      return [.checkpoint(snapshot, then: .paused(progress))]
    case .cancelled(let keepPartial):
      phase = .ended
      return [.end(.interrupted(keepPartial: keepPartial, snapshot))]
    }
  }
}

extension DownloadMachine {
  /// Why a target that takes bytes in order only (`writesInOrderOnly`) cannot start over, once
  /// some went out: nil when it can.
  func cannotStartOver(_ reason: String) -> HaulError? {
    guard configuration.writesInOrderOnly, heldBytes > 0 else { return nil }
    return HaulError(
      .network,
      "the download cannot go on: \(reason), and the \(ByteQuantity.format(heldBytes)) already "
        + "written to the output cannot be taken back",
      hint: LibraryWording.saveToAFileToStartOver)
  }
}

extension DownloadMachine.Round {
  /// A transfer failed for now; the others may go on.
  mutating func noteFailure(_ error: HaulError, retryAfter: Double?, unreached: Bool) {
    failures += 1
    lastError = error
    lastRetryAfter = retryAfter
    if !unreached { onlyUnreached = false }
  }
}
