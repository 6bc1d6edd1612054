/// Response heads: where, if anywhere, a body goes.
extension DownloadMachine {
  /// The head of a transfer's final response (after redirects).
  package mutating func receiveHead(_ id: TransferID, _ facts: ResponseFacts, now: UInt64) -> HeadReply {
    guard case .running(var round) = phase, round.state == .active, var transfer = round.transfers[id],
      transfer.state == .awaitingHead
    else { return .decided(.abort, checksRange: false, []) }
    budget.contacted = true
    answerLatency = now > transfer.startedAt ? now - transfer.startedAt : 0
    let response = facts.summary
    if case .checkFinished(let size) = transfer.plan.target {
      let verdict = FinishedFileCheck.compare(
        recorded: ResourceIdentity(identity), size: size, response: response)
      // An error status says nothing of the version: the file stays complete, unchecked.
      let end: RoundEnd =
        switch verdict {
        case .unchanged, .changed: .alreadyComplete(changed: verdict == .changed)
        case .undecided: .alreadyComplete(changed: false, notChecked: RangeResponse.answered(response.status))
        }
      transfer.state = .superseded
      round.transfers[id] = transfer
      phase = .running(round)
      return .decided(.abort, checksRange: false, endRound(with: end, now: now))
    }
    if case .unnamed = layout, (200..<300).contains(response.status) {
      return .nameTarget(facts.suggestedName)
    }
    // The version other bytes belong to: those held, and those other transfers are writing
    // (received, maybe not written yet). A response must match it to join them.
    let othersWrite = round.transfers.contains { other in
      guard other.key != id else { return false }
      switch other.value.state {
      case .writingStream, .writingSegment, .segmentFilled, .checkingOverlap: return true
      case .awaitingHead, .retryLater, .superseded: return false
      }
    }
    let held: ResourceIdentity? = heldBytes > 0 || othersWrite ? ResourceIdentity(identity) : nil
    var decision = RangeResponse.decide(
      offset: transfer.plan.offset, sentRange: transfer.plan.sendsRange, held: held, response: response)
    if transfer.plan.withoutIfRange, case .append = decision,
      response.status != 206 || !Representation.provesSame(ResourceIdentity(identity), response.identity)
    {
      decision = .restart(
        reason: "the server ignores If-Range, and its range did not carry the ETag and size of the bytes held"
      )
    }
    if case .replaceFromStart = decision, facts.acceptsRanges,
      let again = askWithoutIfRange(transfer, response)
    {
      // The same strong ETag on a whole response to If-Range: the server ignores If-Range
      // (some CDNs). Not the whole file again: this response stops, the range is asked for
      // without If-Range.
      transfer.state = .superseded
      round.transfers[id] = transfer
      let next = newTransferID()
      round.transfers[next] = Transfer(plan: again, state: .awaitingHead, startedAt: now)
      phase = .running(round)
      return .decided(.abort, checksRange: false, [.startTransfer(next, again)])
    }
    if let proof = pendingProof {
      decision = Self.checkProven(
        decision, held: ResourceIdentity(identity), response, transfer.plan, failure: proof.failure)
      if case .append = decision, transfer.plan.overlap == 0 { proven() }
    }
    switch decision {
    case .append(let offset):
      // The overlap's bytes are compared, not written: the data goes on after them.
      return accept(id, facts, at: offset + transfer.plan.overlap, replacing: false, now: now)
    case .replaceFromStart:
      if round.transfers.keys.contains(where: { $0 != id }), let held,
        Representation.isSameOrSameSize(held, response.identity)
      {
        // The server ignores ranges; the other transfers carry on with what they have.
        rangesSupported = false
        transfer.state = .superseded
        round.transfers[id] = transfer
        phase = .running(round)
        return .decided(.abort, checksRange: false, [])
      }
      let reason = "the server sent the whole file (it changed, or does not resume)"
      if let error = cannotStartOver(reason) ?? budget.restarted(reason) {
        return .decided(.abort, checksRange: false, endRound(with: .failed(error), now: now))
      }
      return accept(id, facts, at: 0, replacing: true, now: now, notice: reason)
    case .alreadyComplete:
      if case .stream = layout {
        transfer.state = .superseded
        round.transfers[id] = transfer
        phase = .running(round)
        return .decided(.discard, checksRange: false, endRound(with: .completed, now: now))
      }
      let reason = "the server no longer has the range it was asked for"
      return .decided(.abort, checksRange: false, endRound(with: .restart(reason: reason), now: now))
    case .restart(let reason):
      return .decided(.abort, checksRange: false, endRound(with: .restart(reason: reason), now: now))
    case .retry(let error, let retryAfter):
      if [429, 503].contains(response.status), Self.delivering(round, besides: id) > 0 {
        // An extra connection the server declined (a per-client limit): the others go on and
        // take its range; no more are asked for.
        declined(id, transfer, in: &round, now: now)
        return .decided(.discard, checksRange: false, [])
      }
      transfer.state = .retryLater(
        error, retryAfter: retryAfter.map { Double($0.delay(now: facts.unixTime)) })
      round.transfers[id] = transfer
      phase = .running(round)
      return .decided(.discard, checksRange: false, [])
    case .fail(var error):
      if ExpiredLink.seemsExpired(
        status: response.status, heldBytes: heldBytes, credentialsSent: configuration.sendsCredentials)
      {
        // The run's owner may ask for a fresh URL (`DownloadOptions.refreshURL`).
        error = HaulError(
          error.category, error.message, hint: error.hint,
          underlying: ExpiredLink(status: response.status, heldBytes: heldBytes))
      }
      return .decided(.abort, checksRange: false, endRound(with: .failed(error), now: now))
    }
  }

  /// A connection added to those delivering never delivered (`503`, `429`, refused, reset):
  /// it ends without failing the round, takes no next range, and caps the connections at the
  /// number delivering.
  mutating func declined(_ id: TransferID, _ transfer: Transfer, in round: inout Round, now: UInt64) {
    var transfer = transfer
    transfer.state = .superseded
    transfer.retired = true
    round.transfers[id] = transfer
    noteDeclined(id, in: round, now: now)
    phase = .running(round)
    if let segment = Self.segment(of: transfer) { giveBack(segment, in: round) }
  }

  /// Returns a declined connection's range to the plan, and to the transfer whose response
  /// runs on into it (the one it was split from, usually), which then need not stop there.
  mutating func giveBack(_ segment: Int, in round: Round) {
    guard case .segmented(var planner) = layout, let start = planner.segment(segment)?.start else { return }
    planner.release(segment)
    for (_, transfer) in round.transfers where !transfer.retired {
      // One still waiting for its head counts too: its response will run on as far.
      let other: Int
      switch transfer.state {
      case .writingSegment(let segment): other = segment
      case .awaitingHead:
        guard case .segment(let segment, _, _, _) = transfer.plan.target else { continue }
        other = segment
      case .writingStream, .segmentFilled, .checkingOverlap, .retryLater, .superseded: continue
      }
      guard planner.segment(other)?.end == start else { continue }
      let reach: Int64 =
        switch transfer.plan.target {
        case .segment(_, _, let end, _): end
        case .stream, .checkFinished: planner.total
        }
      _ = planner.extend(other, upTo: reach)
      break
    }
    layout = .segmented(planner)
  }

  /// Tells the controller the server declined transfer `id`.
  mutating func noteDeclined(_ id: TransferID, in round: Round, now: UInt64) {
    let live = round.transfers.count { $0.key != id && !$0.value.retired && $0.value.state != .superseded }
    controller.connectionDeclined(working: Self.delivering(round, besides: id), live: live, now: now)
  }

  /// How many transfers of the round deliver bytes (their response accepted), other than `id`.
  static func delivering(_ round: Round, besides id: TransferID) -> Int {
    round.transfers.count { other in
      guard other.key != id, !other.value.retired else { return false }
      switch other.value.state {
      case .writingStream, .writingSegment, .segmentFilled, .checkingOverlap: return true
      case .awaitingHead, .retryLater, .superseded: return false
      }
    }
  }

  /// For a `200` to a range sent with `If-Range` that carries the strong ETag and size held
  /// (the caller checks `Accept-Ranges: bytes`): the same range without `If-Range`, as a new
  /// segment (the old one ends with its transfer). Once per transfer: the plan it returns is
  /// marked `withoutIfRange`, so a second `200` replaces from byte 0 and counts as a restart.
  mutating func askWithoutIfRange(_ transfer: Transfer, _ response: ResponseSummary) -> TransferPlan? {
    // Alone in its round: a secondary answered with the whole file means a server without ranges.
    guard case .running(let round) = phase, round.transfers.count == 1,
      response.status == 200, transfer.plan.ifRange != nil, !transfer.plan.withoutIfRange,
      pendingProof == nil,
      heldBytes > 0, let etag = identity.etag, EntityTag(headerValue: etag)?.isWeak == false,
      response.etag == etag, identity.totalBytes == nil || identity.totalBytes == response.identity.totalBytes
    else { return nil }
    var target = transfer.plan.target
    if case .segment(let old, let start, let end, let total) = target, case .segmented(var planner) = layout {
      planner.release(old)
      let segment = planner.open(start, end)
      layout = .segmented(planner)
      target = .segment(id: segment.id, start: segment.start, end: segment.end, total: total)
    }
    var plan = makePlan(target, running: 1)
    plan.bufferSize = transfer.plan.bufferSize
    plan.ifRange = nil
    plan.withoutIfRange = true
    return plan
  }

  /// A response of a moved URL, or to a partial Haul did not make, may only continue the bytes
  /// held when it proves it serves the same file: the same size and strong ETag or
  /// Last-Modified, or (nothing else to go by) an overlap that then matches. Anything else
  /// fails with `failure(why)`, the partial left as it was.
  static func checkProven(
    _ decision: RangeResponseAction, held: ResourceIdentity, _ response: ResponseSummary,
    _ plan: TransferPlan,
    failure: (String) -> HaulError
  ) -> RangeResponseAction {
    let why: String
    switch decision {
    case .retry, .fail: return decision
    case .append:
      if plan.overlap > 0 || Representation.provesSame(held, response.identity) { return decision }
      why =
        "its answer does not prove it is the same file (no matching size and strong ETag or Last-Modified)"
    // Most often a server without ranges (wget -c refuses it too): say so, not only that the
    // file may differ.
    case .replaceFromStart:
      why =
        "it answered the request for the missing bytes with the whole file (as a server that cannot resume does)"
    case .alreadyComplete: why = "it could not serve the missing bytes"
    case .restart(let reason): why = reason
    }
    return .fail(failure(why))
  }

  /// The first response proved the held bytes: from now on the state names this URL.
  mutating func proven() {
    guard let proof = pendingProof else { return }
    pendingProof = nil
    guard case .movedFrom(_, let finalURL) = proof else { return }
    identity.url = configuration.recordedURL
    if let finalURL { identity.finalURL = finalURL }
  }

  /// The executor opened the target the response named (`HeadReply.nameTarget`): decide again
  /// with the files it found there.
  package mutating func targetNamed(
    _ id: TransferID, _ start: StartPoint, _ facts: ResponseFacts, now: UInt64
  ) -> HeadReply {
    guard case .running(var round) = phase, round.state == .active, var transfer = round.transfers[id],
      case .unnamed = layout
    else { return .decided(.abort, checksRange: false, []) }
    if case .finished(let record) = start {
      let size = record.totalBytes ?? record.contiguousBytes
      let verdict = FinishedFileCheck.compare(
        recorded: ResourceIdentity(record), size: size, response: facts.summary)
      identity = record
      layout = .finished(size: size)
      transfer.state = .superseded
      round.transfers[id] = transfer
      phase = .running(round)
      return .decided(
        .abort, checksRange: false, endRound(with: .alreadyComplete(changed: verdict != .unchanged), now: now)
      )
    }
    adopt(start)
    resumedFrom = heldBytes
    recordedHeld = heldBytes
    if heldBytes > 0, transfer.plan.offset == 0, (200..<300).contains(facts.summary.status) {
      // This request asked for the whole file, before the bytes held were known: a new round
      // asks for the missing ones (with If-Range, or an overlap that proves the bytes held).
      transfer.state = .superseded
      round.transfers[id] = transfer
      phase = .running(round)
      return .decided(.abort, checksRange: false, endRound(with: .replan, now: now))
    }
    return receiveHead(id, facts, now: now)
  }

  /// Accepts a response whose body goes to `offset`. From byte 0 with nothing kept
  /// (`replacing`, or a fresh start) it records the new version durably before any byte is
  /// written, and ends every other transfer.
  private mutating func accept(
    _ id: TransferID, _ facts: ResponseFacts, at offset: Int64, replacing: Bool, now: UInt64,
    notice: String? = nil
  ) -> HeadReply {
    guard case .running(var round) = phase, var transfer = round.transfers[id] else {
      return .decided(.abort, checksRange: false, [])
    }
    let response = facts.summary
    let total = response.identity.totalBytes
    var actions: [DownloadAction] = notice.map { [.emit(.restarted(reason: $0))] } ?? []
    var activeSegments = 0
    if case .segmented(let planner) = layout { activeSegments = planner.active.count }
    let fresh = replacing || (offset == 0 && heldBytes == 0 && activeSegments <= 1)
    if let total, let free = facts.freeSpace, total - (fresh ? 0 : heldBytes) > free {
      let needed = total - (fresh ? 0 : heldBytes)
      let error = HaulError(
        .fileSystem,
        "the download needs \(ByteQuantity.format(needed)) but only \(ByteQuantity.format(free)) are free "
          + "on the target's file system",
        hint: "free some space, or choose another directory",
        underlying: InsufficientSpace(needed: needed, free: free))
      return .decided(.abort, checksRange: false, actions + endRound(with: .failed(error), now: now))
    }
    if fresh {
      identity = ResumeState(
        url: configuration.recordedURL, finalURL: facts.finalURL, totalBytes: total,
        etag: response.etag, lastModified: response.lastModified,
        digests: facts.wholeFileDigests.isEmpty ? nil : facts.wholeFileDigests)
      var firstID = 1
      if case .segmented(let planner) = layout { firstID = planner.nextID }
      if let total {
        var planner = SegmentPlanner(
          total: total, held: [], minimumSplit: configuration.minimumSplit, firstID: firstID)
        transfer.state = .writingSegment(planner.open(0, total).id)
        layout = .segmented(planner)
      } else {
        transfer.state = .writingStream
        layout = .stream(Stream(written: 0, owner: id))
      }
      resumedFrom = 0
      if replacing {
        // A whole file in answer to If-Range, with other validators: the file changed, and a
        // server that says it serves ranges is believed (more connections may follow). Without
        // If-Range, a whole file for a range means it does not serve them.
        let ifRange = transfer.plan.ifRange
        rangesSupported =
          ifRange != nil && response.identity.ifRangeValue != ifRange && facts.acceptsRanges
          && !rangesDistrusted
      }
      let others = round.transfers.keys.filter { $0 != id }.sorted()
      for other in others { round.transfers[other]?.state = .superseded }
      if !others.isEmpty { actions.append(.cancelTransfers(others)) }
      actions.append(.restartHashing(announced: identity.digests))
      actions.append(.commit(snapshot, truncatingTo: 0))
      recordedHeld = 0
      stateFileDue = true
    } else {
      switch (layout, transfer.plan.target) {
      case (.stream(var stream), _):
        if let total, identity.totalBytes == nil {
          // A resumed stream learns the size: from now on it is a plan with one segment.
          identity.totalBytes = total
          var planner = SegmentPlanner(
            total: total, held: [ByteRange(start: 0, end: offset)], minimumSplit: configuration.minimumSplit)
          transfer.state = .writingSegment(planner.open(offset, total).id)
          layout = .segmented(planner)
        } else {
          stream.owner = id
          transfer.state = .writingStream
          layout = .stream(stream)
        }
      case (.segmented, .segment(let segment, _, _, _)):
        transfer.state = .writingSegment(segment)
      default:
        // A plan that does not fit the layout cannot be written safely: start over.
        return .decided(
          .abort, checksRange: false,
          actions
            + endRound(with: .restart(reason: "the response did not match the download's plan"), now: now))
      }
    }
    if !fresh, transfer.plan.overlap > 0 {
      switch transfer.state {
      case .writingStream: transfer.state = .checkingOverlap(segment: nil, remaining: transfer.plan.overlap)
      case .writingSegment(let segment):
        transfer.state = .checkingOverlap(segment: segment, remaining: transfer.plan.overlap)
      default: break
      }
    }
    let acceptsRanges = response.status == 206 || facts.acceptsRanges
    if acceptsRanges, !replacing, !rangesDistrusted { rangesSupported = true }
    if identity.digests == nil, !facts.wholeFileDigests.isEmpty { identity.digests = facts.wholeFileDigests }
    if case .movedFrom(let url, _) = pendingProof {
      // Recorded with the new URL once the proof comes (`proven()`).
      pendingProof = .movedFrom(url, finalURL: facts.finalURL)
    } else {
      identity.finalURL = facts.finalURL
    }
    if fresh || !round.announced {
      round.announced = true
      // What is on disk was just recorded (or claimed by the saved state): the first
      // checkpoint is due one interval from now, not at the first byte.
      lastCheckpoint = now
      actions.append(
        .announceStart(
          resumedFrom: fresh ? 0 : round.heldAtStart, totalBytes: identity.totalBytes,
          finalURL: facts.finalURL))
    }
    let checksRange = pinForDigestCheck(&transfer, facts)
    round.transfers[id] = transfer
    phase = .running(round)
    // The size may be known now: more transfers start at once rather than at the next tick.
    return .decided(.deliver, checksRange: checksRange, actions + addTransfersIfWanted(now: now))
  }

  /// A `206` with its own `Content-Digest`: its segment is kept whole (pinned) so the complete
  /// response can be checked. From then on new segments start pinned, so none is split while
  /// its request is on the way. False when there is nothing to check (the segment may be split
  /// again), or the segment was split before the response came (its bytes are then covered by
  /// the whole-file checks only).
  private mutating func pinForDigestCheck(_ transfer: inout Transfer, _ facts: ResponseFacts) -> Bool {
    guard case .writingSegment(let id) = transfer.state, case .segmented(var planner) = layout,
      let segment = planner.segment(id)
    else { return false }
    let checkable =
      facts.checkableRange.map { segment.cursor == $0.start && segment.end == $0.end } ?? false
    planner.pin(id, checkable)
    // A server that sends Content-Digest (on a 200 too) will send it with its ranges.
    if checkable || facts.sendsContentDigest { planner.pinsNewSegments = true }
    layout = .segmented(planner)
    return checkable
  }
}

/// The cause of a failure before the body because the file needs more bytes than its file
/// system has free (`ResponseFacts.freeSpace`).
package struct InsufficientSpace: Error, Sendable, Equatable {
  package let needed: Int64
  package let free: Int64

  package init(needed: Int64, free: Int64) {
    self.needed = needed
    self.free = free
  }
}
