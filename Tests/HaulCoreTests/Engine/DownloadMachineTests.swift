import Testing

@testable import HaulCore

/// The download state machine, event by event: what each event makes the executor do.
@Suite struct DownloadMachineTests {
  static let url = "http://h/f"
  static let etag = "\"a\""

  static func machine(
    connections: Int? = 1, attempts: Int = 3, minimumSplit: Int64 = 100, rateLimit: Int64? = nil
  ) -> DownloadMachine {
    DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: url, fixedConnections: connections,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: attempts),
        minimumSplit: minimumSplit, checkpointInterval: 1_000, progressInterval: 1_000, rateLimit: rateLimit))
  }

  static func facts(
    _ status: Int, range: ContentRange? = nil, length: Int64? = nil, etag: String? = etag, free: Int64? = nil,
    retryAfter: RetryAfter? = nil
  ) -> ResponseFacts {
    ResponseFacts(
      summary: ResponseSummary(
        status: status, contentRange: range, contentLength: length, etag: etag, retryAfter: retryAfter),
      finalURL: url, suggestedName: "f", acceptsRanges: true, freeSpace: free)
  }

  static func plan(_ target: TransferPlan.Target, range: String? = nil, ifRange: String? = nil)
    -> TransferPlan
  {
    TransferPlan(target: target, range: range, ifRange: ifRange, bufferSize: 1 << 20)
  }

  static func state(total: Int64? = 1000, held: [ByteRange] = []) -> ResumeState {
    ResumeState(url: url, finalURL: url, totalBytes: total, etag: etag, ranges: held)
  }

  static func started(_ actions: [DownloadAction]) -> [TransferID] {
    actions.compactMap { if case .startTransfer(let id, _) = $0 { id } else { nil } }
  }

  /// A fresh start records the version (truncating) before any byte, then announces it; the
  /// bytes count once written; the end of the response completes the file.
  @Test func aFreshStartRecordsTheVersionBeforeAnyByte() {
    var machine = Self.machine()
    #expect(
      machine.begin(.opened(ResumeState(url: Self.url)), now: 0) == [
        .advanceHashing(to: 0), .startTransfer(1, Self.plan(.stream(from: 0))),
      ])
    let fresh = Self.state(total: 1000)
    #expect(
      machine.receiveHead(1, Self.facts(200, length: 1000), now: 1)
        == .decided(
          .deliver, checksRange: false,
          [
            .restartHashing(announced: nil), .commit(fresh, truncatingTo: 0),
            .announceStart(resumedFrom: 0, totalBytes: 1000, finalURL: Self.url),
          ]))
    #expect(
      machine.receiveBody(1, count: 600, now: 2)
        == .write(offset: 0, count: 600, hashInline: true, flushDue: false, stopAfter: false))
    #expect(machine.heldBytes == 0 && machine.receivedBytes == 600)
    // Written bytes count; the checkpoint is due one interval after the response.
    #expect(
      machine.written(1, through: 600, now: 2_000)
        == [
          .advanceHashing(to: 600),
          .checkpoint(Self.state(total: 1000, held: [ByteRange(start: 0, end: 600)]), then: nil),
        ])
    #expect(
      machine.receiveBody(1, count: 400, now: 2_001)
        == .write(offset: 600, count: 400, hashInline: true, flushDue: false, stopAfter: false))
    #expect(machine.written(1, through: 1000, now: 2_002) == [.advanceHashing(to: 1000)])
    let done = Self.state(total: 1000, held: [ByteRange(start: 0, end: 1000)])
    guard
      case .end(.complete(let state, let summary))? = machine.transferEnded(1, failure: nil, now: 2_003).last
    else {
      Issue.record("the download did not complete")
      return
    }
    #expect(state == done && summary.received == 1000 && summary.resumedFrom == 0)
  }

  /// A resume asks for the first byte not held, with If-Range, and announces what it holds.
  @Test func aResumeAsksForTheRestAndAnnouncesWhatIsHeld() {
    var machine = Self.machine()
    let saved = Self.state(total: 1000, held: [ByteRange(start: 0, end: 400)])
    #expect(
      machine.begin(.opened(saved), now: 0) == [
        .advanceHashing(to: 400),
        .startTransfer(
          1,
          Self.plan(
            .segment(id: 1, start: 400, end: 1000, total: 1000), range: "bytes=400-", ifRange: Self.etag)),
      ])
    #expect(
      machine.receiveHead(
        1, Self.facts(206, range: .range(first: 400, last: 999, total: 1000), length: 600), now: 1)
        == .decided(
          .deliver, checksRange: false,
          [.announceStart(resumedFrom: 400, totalBytes: 1000, finalURL: Self.url)]))
    #expect(machine.resumedFrom == 400)
  }

  /// Responses that cannot be appended: the decision for each, as a table.
  static let refusals: [(facts: ResponseFacts, expectation: String)] = [
    (facts(206, range: .range(first: 300, last: 999, total: 1000), length: 700), "restart: from 300"),
    (facts(206, range: .range(first: 400, last: 1199, total: 1200), length: 800), "restart: changed size"),
    (
      facts(206, range: .range(first: 400, last: 999, total: 1000), length: 600, etag: "\"b\""),
      "restart: ETag"
    ),
    (facts(404), "fail: 404"),
    (facts(401), "fail: 401"),
    (facts(416, range: .unsatisfied(total: 300)), "restart: shorter than the partial"),
  ]

  @Test(arguments: 0..<refusals.count)
  func responsesThatCannotBeAppendedNeverWriteAByte(_ index: Int) {
    let row = Self.refusals[index]
    var machine = Self.machine()
    _ = machine.begin(.opened(Self.state(total: 1000, held: [ByteRange(start: 0, end: 400)])), now: 0)
    guard case .decided(.abort, false, let actions) = machine.receiveHead(1, row.facts, now: 1) else {
      Issue.record("\(row.expectation): the body was not refused")
      return
    }
    #expect(actions == [.cancelTransfers([1])])
    #expect(machine.receiveBody(1, count: 10, now: 2) == .stale)
    let ending = machine.transferEnded(
      1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 3)
    let (kind, word) = (
      row.expectation.prefix { $0 != ":" }, row.expectation.split(separator: " ").last ?? ""
    )
    if kind == "fail" {
      guard case .end(.failed(let error, let state))? = ending.last else {
        Issue.record("\(row.expectation): \(ending)")
        return
      }
      #expect(error.message.contains(word))
      #expect(state.ranges == [ByteRange(start: 0, end: 400)], "what is held stays")
    } else {
      guard case .emit(.restarted(let reason))? = ending.first else {
        Issue.record("\(row.expectation): \(ending)")
        return
      }
      #expect(reason.contains(word), "\(reason)")
      #expect(ending.contains(.commit(ResumeState(url: Self.url), truncatingTo: 0)))
      #expect(ending.last == .startTransfer(2, Self.plan(.stream(from: 0))), "the whole file, without ranges")
    }
  }

  /// A 200 of another version to a range: the data starts over with this very response (and
  /// says so). (One with the ETag held: `IgnoredIfRangeTests`.)
  @Test func aWholeResponseToARangeReplacesFromByteZero() {
    var machine = Self.machine()
    _ = machine.begin(.opened(Self.state(total: 1000, held: [ByteRange(start: 0, end: 400)])), now: 0)
    guard
      case .decided(.deliver, false, let actions) = machine.receiveHead(
        1, Self.facts(200, length: 1000, etag: "\"b\""), now: 1)
    else {
      Issue.record("the whole response was refused")
      return
    }
    #expect(
      actions.first
        == .emit(.restarted(reason: "the server sent the whole file (it changed, or does not resume)")))
    var replaced = Self.state(total: 1000)
    replaced.etag = "\"b\""
    #expect(actions.contains(.commit(replaced, truncatingTo: 0)))
    #expect(actions.last == .announceStart(resumedFrom: 0, totalBytes: 1000, finalURL: Self.url))
    #expect(
      machine.receiveBody(1, count: 10, now: 2)
        == .write(offset: 0, count: 10, hashInline: true, flushDue: false, stopAfter: false))
    // Another ETag under If-Range: the file changed; its ranges still work (ForeignPartialTests).
    #expect(machine.rangesSupported)
  }

  /// With several connections, a secondary answered with the same whole file is dropped and
  /// the others go on; more connections are not asked for.
  @Test func aSecondaryAnsweredWithTheWholeFileIsDropped() {
    var machine = Self.machine(connections: 2)
    _ = machine.begin(.opened(ResumeState(url: Self.url)), now: 0)
    guard
      case .decided(.deliver, _, let actions) = machine.receiveHead(1, Self.facts(200, length: 1000), now: 1)
    else {
      Issue.record("the first response was refused")
      return
    }
    #expect(Self.started(actions) == [2])
    _ = machine.receiveBody(1, count: 300, now: 2)
    _ = machine.written(1, through: 300, now: 2)
    let reply = machine.receiveHead(2, Self.facts(200, length: 1000), now: 2)
    #expect(reply == .decided(.abort, checksRange: false, []))
    #expect(!machine.rangesSupported)
    #expect(
      machine.transferEnded(2, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 3) == [])
    #expect(machine.tick(now: 1_000_000).allSatisfy { if case .startTransfer = $0 { false } else { true } })
  }

  /// The first progress event shows a measured rate (the meter starts at `begin`), not 0.
  @Test func theFirstProgressShowsARealRate() {
    var machine = Self.machine()
    _ = machine.begin(.opened(ResumeState(url: Self.url)), now: 1_000_000_000)
    _ = machine.receiveHead(1, Self.facts(200, length: 1_000_000), now: 1_100_000_000)
    _ = machine.receiveBody(1, count: 50_000, now: 1_200_000_000)
    let progress = machine.tick(now: 1_500_000_000).compactMap {
      if case .emit(.progress(let progress)) = $0 { progress } else { nil }
    }
    #expect(progress.first?.bytesPerSecond == 100_000, "\(progress)")
  }

  /// An error status is retried after the server's Retry-After; the retry resumes.
  @Test func anErrorStatusIsRetriedAfterTheServersDelay() {
    var machine = Self.machine()
    _ = machine.begin(.opened(Self.state(total: 1000, held: [ByteRange(start: 0, end: 400)])), now: 0)
    #expect(
      machine.receiveHead(1, Self.facts(503, retryAfter: .seconds(2)), now: 1)
        == .decided(.discard, checksRange: false, []))
    let actions = machine.transferEnded(1, failure: nil, now: 2)
    let error = HaulError(.server, "the server answered 503 Service Unavailable")
    #expect(
      actions == [
        .checkpoint(Self.state(total: 1000, held: [ByteRange(start: 0, end: 400)]), then: nil),
        .emit(.retrying(RetryNotice(attempt: 1, maxAttempts: 3, delay: 2, reason: error))),
        .scheduleRetry(after: 2, token: 1),
      ])
    #expect(machine.retryDelayOver(token: 2, now: 3) == [], "a stale timer does nothing")
    #expect(Self.started(machine.retryDelayOver(token: 1, now: 3)) == [2])
  }

  /// Pause: the transfers stop, what was received becomes durable, then `.paused`; resume
  /// starts from the bytes held and says so in a second `.started`.
  @Test func pauseThenResumeStartsFromWhatIsHeld() {
    var machine = Self.machine()
    _ = machine.begin(.opened(ResumeState(url: Self.url)), now: 0)
    _ = machine.receiveHead(1, Self.facts(200, length: 1000), now: 1)
    _ = machine.receiveBody(1, count: 300, now: 2)
    #expect(machine.pause(now: 3) == [.cancelTransfers([1])])
    #expect(machine.receiveBody(1, count: 10, now: 4) == .stale, "nothing more after the pause")
    // A write in flight still counts.
    _ = machine.written(1, through: 300, now: 5)
    let held = Self.state(total: 1000, held: [ByteRange(start: 0, end: 300)])
    let progress = DownloadProgress(bytes: 300, totalBytes: 1000, bytesPerSecond: 0, connections: 0)
    #expect(
      machine.transferEnded(1, failure: TransportFailure(kind: .cancelled, message: "", code: 0), now: 6)
        == [.checkpoint(held, then: .paused(progress))])
    let resumed = machine.resume(now: 7)
    #expect(resumed.first == .emit(.resumed))
    #expect(
      resumed.last
        == .startTransfer(
          2,
          Self.plan(
            .segment(id: 2, start: 300, end: 1000, total: 1000), range: "bytes=300-", ifRange: Self.etag)))
    #expect(
      machine.receiveHead(
        2, Self.facts(206, range: .range(first: 300, last: 999, total: 1000), length: 700), now: 8)
        == .decided(
          .deliver, checksRange: false,
          [.announceStart(resumedFrom: 300, totalBytes: 1000, finalURL: Self.url)]))
  }

  @Test func cancelEndsAtOnceBetweenRoundsAndAfterTheTransfersWhileRunning() {
    var waiting = Self.machine()
    _ = waiting.begin(.opened(ResumeState(url: Self.url)), now: 0)
    _ = waiting.receiveHead(1, Self.facts(503), now: 1)
    _ = waiting.transferEnded(1, failure: nil, now: 2)
    #expect(
      waiting.cancel(keepPartial: true, now: 3) == [
        .end(.interrupted(keepPartial: true, ResumeState(url: Self.url)))
      ])

    var running = Self.machine()
    _ = running.begin(.opened(ResumeState(url: Self.url)), now: 0)
    #expect(running.cancel(keepPartial: false, now: 1) == [.cancelTransfers([1])])
    #expect(
      running.transferEnded(1, failure: TransportFailure(kind: .cancelled, message: "", code: 0), now: 2)
        == [.end(.interrupted(keepPartial: false, ResumeState(url: Self.url)))])
  }

  /// Issue 11: a known size larger than the free space stops before the body.
  @Test func aSizeBeyondTheFreeSpaceStopsBeforeTheBody() {
    var machine = Self.machine()
    _ = machine.begin(.opened(ResumeState(url: Self.url)), now: 0)
    guard
      case .decided(.abort, false, let actions) = machine.receiveHead(
        1, Self.facts(200, length: 1 << 60, free: 1 << 30), now: 1)
    else {
      Issue.record("the body was not refused")
      return
    }
    #expect(actions == [.cancelTransfers([1])])
    guard case .end(.failed(let error, _))? = machine.transferEnded(1, failure: nil, now: 2).last else {
      Issue.record("the download did not fail")
      return
    }
    #expect(error.category == .fileSystem)
    #expect(
      error.message == "the download needs 1.00 EiB but only 1.00 GiB are free on the target's file system")
    #expect(error.underlying as? InsufficientSpace == InsufficientSpace(needed: 1 << 60, free: 1 << 30))
  }

  /// Issue 16: a name that does not resolve fails at once; a refusal before any answer gets
  /// three attempts at most.
  @Test func failingFastWhereWaitingCannotHelp() {
    var unresolved = Self.machine(attempts: 10)
    _ = unresolved.begin(.opened(ResumeState(url: Self.url)), now: 0)
    guard
      case .end(.failed(let error, _))? = unresolved.transferEnded(
        1, failure: TransportFailure(kind: .resolve, message: "Could not resolve host: h", code: 6), now: 1
      ).last
    else {
      Issue.record("an unresolved name was retried")
      return
    }
    #expect(error.category == .network && error.message.hasPrefix("cannot resolve the host name"))

    var refused = Self.machine(attempts: 10)
    _ = refused.begin(.opened(ResumeState(url: Self.url)), now: 0)
    var attempts = 0
    var actions = [DownloadAction]()
    repeat {
      attempts += 1
      actions = refused.transferEnded(
        attempts, failure: TransportFailure(kind: .connect, message: "refused", code: 7),
        now: UInt64(attempts))
      if case .scheduleRetry(_, let token)? = actions.last {
        _ = refused.retryDelayOver(token: token, now: 0)
      }
    } while actions.count > 1
    #expect(attempts == 3)
    guard case .end(.failed(let gaveUp, _))? = actions.last else {
      Issue.record("no end")
      return
    }
    #expect(gaveUp.message == "cannot connect: refused (gave up after 3 attempts without progress)")
  }

  /// A range failing its own Content-Digest is fetched again once; failing twice ends it.
  @Test func aRangeFailingItsDigestIsFetchedAgainOnce() {
    var machine = Self.machine(connections: 1)
    _ = machine.begin(.opened(Self.state(total: 1000, held: [ByteRange(start: 0, end: 400)])), now: 0)
    var facts = Self.facts(206, range: .range(first: 400, last: 999, total: 1000), length: 600)
    facts.checkableRange = ByteRange(start: 400, end: 1000)
    facts.sendsContentDigest = true
    guard case .decided(.deliver, true, _) = machine.receiveHead(1, facts, now: 1) else {
      Issue.record("the range's digest is not checked")
      return
    }
    #expect(
      machine.receiveBody(1, count: 600, now: 2)
        == .write(offset: 400, count: 600, hashInline: false, flushDue: false, stopAfter: false))
    _ = machine.written(1, through: 1000, now: 3)
    #expect(machine.verifiedPrefix == 400, "bytes awaiting their check are not hashed as the file's")
    let mismatch = RangeDigestMismatch(
      range: ByteRange(start: 400, end: 1000), algorithm: .sha256, expected: "00", actual: "11")
    let first = machine.transferEnded(1, failure: nil, mismatch: mismatch, now: 4)
    #expect(
      first.contains(
        .emit(
          .retrying(RetryNotice(attempt: 1, maxAttempts: 2, delay: 0, reason: mismatch.error(again: false)))))
    )
    #expect(machine.heldBytes == 400, "the failed range is not held")
    let again = Self.started(first)
    #expect(again.count == 1)
    _ = machine.receiveHead(again[0], facts, now: 5)
    _ = machine.receiveBody(again[0], count: 600, now: 6)
    _ = machine.written(again[0], through: 1000, now: 7)
    guard
      case .end(.failed(let error, let state))? = machine.transferEnded(
        again[0], failure: nil, mismatch: mismatch, now: 8
      ).last
    else {
      Issue.record("a second mismatch did not end the download")
      return
    }
    #expect(error == mismatch.error(again: true))
    #expect(state.ranges == [ByteRange(start: 0, end: 400)], "only the verified bytes are kept")
  }

  /// A resumed stream of unknown size learns it from a 206: from then on it is a plan, and
  /// more connections may join.
  @Test func aResumedStreamLearnsItsSize() {
    var machine = Self.machine(connections: 4)
    _ = machine.begin(.opened(Self.state(total: nil, held: [ByteRange(start: 0, end: 300)])), now: 0)
    guard
      case .decided(.deliver, false, let actions) = machine.receiveHead(
        1, Self.facts(206, range: .range(first: 300, last: 99_999, total: 100_000), length: 99_700), now: 1)
    else {
      Issue.record("the response was refused")
      return
    }
    #expect(machine.identity.totalBytes == 100_000)
    #expect(Self.started(actions).count == 3)
    guard case .segmented(let planner) = machine.layout else {
      Issue.record("still a stream")
      return
    }
    #expect(planner.held == [ByteRange(start: 0, end: 300)])
    // Work stealing split the first range: it stops where the second begins.
    let stopAt = planner.active.first { $0.start == 300 }?.end ?? 0
    guard case .write(300, let count, _, _, _) = machine.receiveBody(1, count: Int(stopAt - 300) + 50, now: 2)
    else {
      Issue.record("no slot")
      return
    }
    #expect(count == Int(stopAt - 300))
  }

  /// The timer records written bytes on time when no more arrive (a stalled server), and a
  /// download that lasts gets its state file one interval after it started, bytes or not.
  @Test func theTimerRecordsWhatIsWrittenWhenNoMoreArrives() {
    var machine = Self.machine()
    _ = machine.begin(.opened(ResumeState(url: Self.url)), now: 0)
    _ = machine.receiveHead(1, Self.facts(200, length: 1000), now: 10)
    #expect(machine.tick(now: 500).filter(Self.isCheckpoint).isEmpty, "not due yet")
    let first = machine.tick(now: 1_010).filter(Self.isCheckpoint)
    #expect(first == [.checkpoint(Self.state(total: 1000), then: nil)], "the state file, with nothing held")
    #expect(machine.tick(now: 1_020).filter(Self.isCheckpoint).isEmpty, "one at a time")
    _ = machine.checkpointDone(nanoseconds: 0)
    _ = machine.receiveBody(1, count: 300, now: 1_400)
    // The write lands before the next interval is over; then no byte comes: the tick records it.
    #expect(machine.written(1, through: 300, now: 1_500).filter(Self.isCheckpoint).isEmpty)
    #expect(machine.tick(now: 1_900).filter(Self.isCheckpoint).isEmpty, "not due yet")
    #expect(
      machine.tick(now: 2_100).filter(Self.isCheckpoint)
        == [.checkpoint(Self.state(total: 1000, held: [ByteRange(start: 0, end: 300)]), then: nil)])
  }

  /// A checkpoint starts early by how far the last one lagged: its sync, counted from when it
  /// was asked, plus the age of the bytes still on their way to the file at its snapshot (at
  /// the measured speed). So a hard kill loses about one interval of received bytes, not one
  /// interval plus the write queue.
  @Test func theNextCheckpointStartsEarlyByTheLastOnesLag() {
    var machine = DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: Self.url, fixedConnections: 1,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3),
        minimumSplit: 100, checkpointInterval: 1_000_000, progressInterval: 1_000_000))
    _ = machine.begin(.opened(ResumeState(url: Self.url)), now: 0)
    _ = machine.receiveHead(1, Self.facts(200, length: 10_000), now: 0)
    _ = machine.receiveBody(1, count: 600, now: 500_000)
    // The state file, and the speed: 600 bytes in 1 ms.
    #expect(machine.tick(now: 1_000_000).filter(Self.isCheckpoint).count == 1)
    _ = machine.checkpointDone(nanoseconds: 50_000)
    _ = machine.receiveBody(1, count: 300, now: 1_600_000)
    #expect(machine.written(1, through: 800, now: 1_700_000).filter(Self.isCheckpoint).isEmpty)
    // Due 50 µs early; 100 bytes are still on their way: 1/6 ms at 600 bytes per ms.
    #expect(machine.tick(now: 1_949_999).filter(Self.isCheckpoint).isEmpty)
    #expect(
      machine.tick(now: 1_950_000).filter(Self.isCheckpoint)
        == [.checkpoint(Self.state(total: 10_000, held: [ByteRange(start: 0, end: 800)]), then: nil)])
    _ = machine.checkpointDone(nanoseconds: 100_000)
    _ = machine.written(1, through: 900, now: 2_000_000)
    // The next: 100 µs of sync plus 166,666 ns of unwritten bytes early.
    #expect(machine.tick(now: 2_683_333).filter(Self.isCheckpoint).isEmpty)
    #expect(
      machine.tick(now: 2_683_334).filter(Self.isCheckpoint)
        == [.checkpoint(Self.state(total: 10_000, held: [ByteRange(start: 0, end: 900)]), then: nil)])
  }

  static func isCheckpoint(_ action: DownloadAction) -> Bool {
    if case .checkpoint = action { return true }
    return false
  }

  /// Found by the fuzz test: nothing written yet, a second transfer writing version a, and the
  /// first (a plain GET) answered with version b: b replaces, it never joins a.
  @Test func aWholeResponseOfAnotherVersionNeverJoinsBytesBeingWritten() {
    var machine = Self.machine(connections: 2, minimumSplit: 1000)
    _ = machine.begin(.opened(Self.state(total: 100_000)), now: 0)
    let added = Self.started(machine.tick(now: 1_000_000))
    #expect(added == [2])
    guard
      case .decided(.deliver, _, _) = machine.receiveHead(
        2, Self.facts(206, range: .range(first: 50_000, last: 99_999, total: 100_000), length: 50_000), now: 2
      )
    else {
      Issue.record("the second transfer's range was refused")
      return
    }
    guard
      case .decided(.deliver, _, let actions) = machine.receiveHead(
        1, Self.facts(200, length: 100_000, etag: "\"b\""), now: 3)
    else {
      Issue.record("the whole response was refused")
      return
    }
    #expect(
      actions.first
        == .emit(.restarted(reason: "the server sent the whole file (it changed, or does not resume)")))
    #expect(actions.contains(.cancelTransfers([2])))
    #expect(machine.identity.etag == "\"b\"")
    #expect(machine.receiveBody(2, count: 10, now: 4) == .stale)
  }

  /// Automatic mode measures a step once its new connections have begun their responses. Here
  /// each takes 300 ms to answer (a TLS handshake over a long round trip), then brings as much
  /// as the first: a window that started while they were being made would see no gain and hold
  /// at four connections; measured from their answers, the step to 16 is taken.
  @Test func aStepIsMeasuredOnceItsConnectionsHaveAnswered() {
    let total: Int64 = 100_000_000
    var machine = Self.machine(connections: nil, minimumSplit: 1000)
    var started = Self.started(machine.begin(.opened(ResumeState(url: Self.url)), now: 0))
    var answersAt: [TransferID: UInt64] = [1: 10_000_000]
    var plans: [TransferID: TransferPlan.Target] = [:]
    let ms: UInt64 = 1_000_000
    var answered: Set<TransferID> = []
    for now in stride(from: 10 * ms, through: 3_000 * ms, by: 10_000_000) {
      for (id, at) in answersAt where at <= now && !answered.contains(id) {
        answered.insert(id)
        let facts: ResponseFacts
        if case .segment(_, let start, let end, _)? = plans[id] {
          facts = Self.facts(
            206, range: .range(first: start, last: end - 1, total: total), length: end - start)
        } else {
          facts = Self.facts(200, length: total)
        }
        guard case .decided(.deliver, _, _) = machine.receiveHead(id, facts, now: now) else {
          Issue.record("transfer \(id)'s response was refused")
          return
        }
      }
      // 2 MB/s per connection that has answered.
      for id in answered { _ = machine.receiveBody(id, count: 20_000, now: now) }
      if now % (50 * ms) == 0 {
        for action in machine.tick(now: now) {
          guard case .startTransfer(let id, let plan) = action else { continue }
          started.append(id)
          plans[id] = plan.target
          answersAt[id] = now + 300 * ms
        }
      }
    }
    #expect(started.count == 16, "\(started.count) connections")
  }

  /// A connection that finished its range takes half of another down to what it would receive
  /// in two answer times at a connection's speed: far under `minimumSplit` on a server that
  /// paces each connection and answers at once, never under 64 KiB, never over the minimum.
  @Test func theSmallestStolenHalfFollowsTheSpeedAndTheAnswerTime() {
    var machine = Self.machine(connections: 16, minimumSplit: 1 << 20)
    #expect(machine.smallestStolenHalf(running: 16) == 1 << 20, "nothing measured yet")
    machine.answerLatency = 2_000_000
    #expect(machine.smallestStolenHalf(running: 16) == 1 << 20, "no speed yet")
    machine.speed.record(bytes: 0, at: 0)
    machine.speed.record(bytes: 32_000_000, at: 1_000_000_000)
    // 2 MB/s each, answers in 2 ms: 8 kB would do; the floor is 64 KiB.
    #expect(machine.smallestStolenHalf(running: 16) == 64 << 10)
    machine.answerLatency = 100_000_000
    // Answers in 100 ms: 400 kB.
    #expect(machine.smallestStolenHalf(running: 16) == 400_000)
    // One connection at 32 MB/s: 6.4 MB is worth more than the minimum, which stays the limit.
    #expect(machine.smallestStolenHalf(running: 1) == 1 << 20)
  }
}
