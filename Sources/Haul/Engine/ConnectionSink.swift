import Dispatch

/// Receives one transfer's events on the transport's event thread and turns them into the
/// machine's events: a head into a disposition, bytes into a slot and a staged write, the
/// finish (after the last staged write is on disk) into `transferEnded`.
final class ConnectionSink: TransferSink {
  private let run: DownloadRun
  private let id: TransferID
  private let plan: TransferPlan
  /// Event-thread state, boxed so the sink may be shared with the lane's callbacks.
  private let box = Locked(Box())

  private struct Box {
    var handle: (any TransferHandle)?
    /// The transfer was to be resumed before `attach` gave its handle (the event thread may
    /// reach the head before the thread that started the transfer attaches it).
    var resumeOwed = false
    /// Set when the response carries a digest of its range.
    var rangeCheck: RangeDigestCheck?
    /// This transfer's bytes on their way to the file; created with the first body bytes,
    /// with the file and hasher the response was accepted for.
    var stager: BlockStager?
    var hasher: PrefixHasher?
    /// Whether the bytes are hashed while written (not while they await their range's check).
    var hashInline = true
    var naming = Naming.none
    /// The response's `Content-Length`: a smaller body gets blocks no larger than itself.
    var expectedBody: Int64?
  }

  /// A head that named the target (a directory destination) has it opened on the system's
  /// pool, never on the event thread: creating a file waits on the directory, and every other
  /// transfer would wait with it. Meanwhile the body waits (the transfer is paused).
  private enum Naming {
    case none
    /// Being opened; `check` is the response's range check, if it has one; a finish that came
    /// meanwhile runs once the target is open.
    case opening(check: RangeDigestCheck?, finish: (@Sendable () -> Void)?)
    /// Opened: what the body does.
    case decided(BodyDisposition)
  }

  /// The held bytes `[plan.offset, plan.dataStart)` the response must repeat.
  private let held: [UInt8]

  init(run: DownloadRun, id: TransferID, plan: TransferPlan, held: [UInt8]) {
    self.run = run
    self.id = id
    self.plan = plan
    self.held = held
  }

  func attach(_ handle: any TransferHandle) {
    let owed: Bool = box.withLock { box in
      box.handle = handle
      defer { box.resumeOwed = false }
      return box.resumeOwed
    }
    if owed { handle.resumeReceiving() }
  }

  /// Offers the bytes the sink refused with `.pause` again, now or once the handle is attached.
  private func resumeTransfer() {
    let handle: (any TransferHandle)? = box.withLock { box in
      if box.handle == nil { box.resumeOwed = true }
      return box.handle
    }
    handle?.resumeReceiving()
  }

  func transferDidReceiveHead(_ head: ResponseHead) -> BodyDisposition {
    var check: RangeDigestCheck?
    if head.status == 206,
      case .range(let first, let last, _)? = head.headers["Content-Range"].flatMap(
        ContentRange.init(headerValue:))
    {
      check = RangeDigestCheck(head: head, range: ByteRange(start: first, end: last + 1))
    }
    let facts = run.facts(head, checkable: check?.range)
    box.withLock { $0.expectedBody = facts.summary.contentLength }
    var reply = run.decide { $0.receiveHead(id, facts, now: $1) }
    if case .nameTarget(let name) = reply, let start = run.takePrepared(named: name) {
      // Opened before the request: nothing to wait for.
      reply = run.decide { $0.targetNamed(id, start, facts, now: $1) }
    }
    guard case .nameTarget(let name) = reply else { return settle(reply, check) }
    box.withLock { $0.naming = .opening(check: check, finish: nil) }
    BlockingWork.run { [self] in openTarget(name, facts) }
    return .deliver  // `transferDidReceive` pauses until the target is open
  }

  /// Sets up what the machine decided for the response; returns what the body does.
  private func settle(_ reply: HeadReply, _ check: RangeDigestCheck?) -> BodyDisposition {
    guard case .decided(let disposition, let checksRange, let actions) = reply else { return .abort }
    if checksRange, let check { box.withLock { $0.rangeCheck = check } }
    run.perform(actions)
    return disposition
  }

  /// On a thread of its own (`BlockingWork`): opens the target the head named, then lets the body (or the
  /// transfer's finish, if it came meanwhile) go on.
  private func openTarget(_ name: String, _ facts: ResponseFacts) {
    var reply = HeadReply.nameTarget(name)
    while case .nameTarget(let name) = reply {
      reply = run.nameTarget(name, for: id, facts: facts)
    }
    let check: RangeDigestCheck? = box.withLock { box in
      if case .opening(let check, _) = box.naming { check } else { nil }
    }
    let disposition = settle(reply, check)
    let finish: (@Sendable () -> Void)? = box.withLock { box in
      guard case .opening(_, let finish) = box.naming else { return nil }
      box.naming = .decided(disposition)
      return finish
    }
    if let finish { finish() } else { resumeTransfer() }
  }

  func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> ReceiveResult {
    switch box.withLock({ $0.naming }) {
    case .opening: return .pause
    case .decided(.abort): return .abort
    case .decided(.discard): return .accepted
    case .none, .decided(.deliver): break
    }
    // Room first: paused bytes are offered again, so nothing may be counted before this.
    if let stager = box.withLock({ $0.stager }), !stager.reserveRoom(for: bytes.count) { return .pause }
    var bytes = bytes
    var slot = run.decide { $0.receiveBody(id, count: bytes.count, now: $1) }
    if case .compare(let offset, let count, let last) = slot {
      // The overlap (no stager exists yet, so this chunk is never offered again).
      let matched = repeatsHeld(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: offset)
      if !matched || last { run.handle { $0.overlapChecked(id, matched: matched, now: $1) } }
      guard matched else { return .abort }
      guard count < bytes.count else { return .accepted }
      bytes = UnsafeRawBufferPointer(rebasing: bytes[count...])
      slot = run.decide { [bytes] in $0.receiveBody(id, count: bytes.count, now: $1) }
    }
    // Not wanted (a stop was decided, the range was replaced): this chunk is refused. The bytes
    // staged before it were counted where they were reserved; the finish asks the machine
    // whether they are kept (a stop keeps them) before it writes or drops them.
    guard case .write(let offset, let count, let hashInline, let flushDue, let stopAfter) = slot else {
      return .abort
    }
    guard let stager = stager() else { return .abort }
    let hasher: PrefixHasher? = box.withLock { box in
      box.rangeCheck?.update(bytes)
      box.hashInline = hashInline
      return hashInline ? box.hasher : nil
    }
    if count > 0 {
      stager.append(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: offset, hasher: hasher)
    }
    // Waiting bytes go to the file before a checkpoint is taken, and on a slow connection
    // before they are half an interval old, so a crash loses no more than an interval.
    let now = Monotonic.now()
    let waited = now > stager.waitingSince ? now - stager.waitingSince : 0
    if stager.isHolding, flushDue || Double(waited) >= run.options.checkpointInterval * 0.5e9 {
      stager.flush(hasher: hasher)
    }
    return stopAfter ? .abort : .accepted
  }

  /// Whether `bytes` equal the held bytes at `offset`.
  private func repeatsHeld(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
    let from = Int(offset - plan.offset)
    guard from >= 0, from + bytes.count <= held.count else { return false }
    return held[from..<(from + bytes.count)].elementsEqual(bytes)
  }

  /// The stager, created at the first bytes for the file the response was accepted for.
  private func stager() -> BlockStager? {
    if let stager = box.withLock({ $0.stager }) { return stager }
    let (target, hasher) = run.files.withLock { ($0.target, $0.hasher) }
    guard let target else { return nil }
    let id = id
    let callbacks = BlockStager.Callbacks(
      written: { [run] through in run.handle { $0.written(id, through: through, now: $1) } },
      failed: { [run] error in
        let failure = HaulError(
          .fileSystem, FileErrorText.describe(error, path: target.part.path), underlying: error)
        run.handle { $0.writeFailed(id, failure, now: $1) }
      },
      // Weak: the box holds the stager, which holds these callbacks.
      roomAgain: { [weak self] in self?.resumeTransfer() })
    // One connection gets four blocks, so the network keeps going while the disk syncs;
    // many share the memory.
    let blocks = plan.bufferSize >= 1 << 20 ? 4 : 2
    // A 100 KiB file's block is 100 KiB: malloc then reuses it for the next file, where a
    // 1 MiB block was mapped and unmapped each time (page faults, TLB flushes).
    let expected = box.withLock { $0.expectedBody }
    let blockSize = expected.map { min(plan.bufferSize, Int(clamping: max(1, $0))) } ?? plan.bufferSize
    let stager = BlockStager(
      file: target.part, io: target.io, blockSize: blockSize, blocks: blocks, callbacks: callbacks)
    box.withLock {
      $0.stager = stager
      $0.hasher = hasher
    }
    return stager
  }

  func transferDidFinish(head: ResponseHead?, failure: TransportFailure?) {
    let waits: Bool = box.withLock { box in
      // A body-less response (an empty file) ends before its target is open.
      guard case .opening(let check, _) = box.naming else { return false }
      box.naming = .opening(check: check, finish: { [self] in finished(failure: failure) })
      return true
    }
    if !waits { finished(failure: failure) }
  }

  private func finished(failure reported: TransportFailure?) {
    run.forget(id)
    // The transport took the body as delivered; the target's opening refused it.
    let refused =
      reported == nil
      && box.withLock { box in
        if case .decided(.abort) = box.naming { true } else { false }
      }
    let failure = refused ? .refusedBySink : reported
    let (stager, check, hasher) = box.withLock { box in
      defer {
        box.stager = nil
        box.handle = nil
      }
      return (box.stager, box.rangeCheck, box.hashInline ? box.hasher : nil)
    }
    var found: RangeDigestMismatch?
    if failure == nil, let check, case .mismatched(let actual) = check.finish() {
      found = RangeDigestMismatch(
        range: check.range, algorithm: check.algorithm, expected: check.expected, actual: actual)
    }
    let mismatch = found
    let (run, id) = (run, id)
    let ended: @Sendable () -> Void = {
      run.handle { $0.transferEnded(id, failure: failure, mismatch: mismatch, now: $1) }
    }
    guard let stager else { return ended() }
    // The bytes still waiting count once they are in the file; a replaced range drops them.
    if mismatch == nil, run.decide({ machine, _ in machine.keepsStagedBytes(id) }) {
      stager.flush(hasher: hasher)
    } else {
      stager.discard()
    }
    stager.finish(then: ended)
  }
}
