import Testing

@testable import HaulCore

/// `--continue` with a partial Haul did not make (`StartPoint.foreignPartial`): its bytes are
/// continued only once the server's first response repeats their end identically; anything
/// else fails with the file left as it was (`UnprovenPartial`), never a start over that would
/// replace the user's file. And a first response that named a target holding bytes is followed
/// by a request for the missing ones, not used from byte 0 (`RoundEnd.replan`).
@Suite struct ForeignPartialTests {
  static let url = "http://h/f"

  static func machine(connections: Int? = 1) -> DownloadMachine {
    DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: url, fixedConnections: connections,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3),
        minimumSplit: 100, checkpointInterval: 1_000, progressInterval: 1_000))
  }

  /// Another tool's 100,000 bytes: no validator, no size.
  static let foreign = ResumeState(url: url, ranges: [ByteRange(start: 0, end: 100_000)])

  static func facts(_ status: Int, first: Int64 = 34_464, total: Int64 = 200_000, etag: String? = "\"v\"")
    -> ResponseFacts
  {
    ResponseFacts(
      summary: ResponseSummary(
        status: status,
        contentRange: status == 206
          ? .range(first: first, last: total - 1, total: total)
          : status == 416 ? .unsatisfied(total: total) : nil,
        contentLength: status == 206 ? total - first : total, etag: etag),
      finalURL: url, suggestedName: "f", acceptsRanges: true)
  }

  static func failure(_ machine: inout DownloadMachine) -> HaulError? {
    let actions = machine.transferEnded(
      1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 9)
    guard case .end(.failed(let error, _))? = actions.last else { return nil }
    #expect(!actions.contains { if case .commit = $0 { true } else { false } }, "nothing truncated")
    return error
  }

  /// The first request repeats the last 64 KiB held; when they match the rest is written after
  /// them and more connections may follow.
  @Test func theOverlapProvesIt() {
    var machine = Self.machine(connections: 3)
    let begun = machine.begin(.foreignPartial(Self.foreign), now: 0)
    guard case .startTransfer(1, let plan)? = begun.last else {
      Issue.record("no request: \(begun)")
      return
    }
    #expect(plan.overlap == DownloadMachine.overlapLength && plan.range == "bytes=34464-")
    #expect(machine.pendingProof == .foreignPartial)
    guard case .decided(.deliver, _, let actions) = machine.receiveHead(1, Self.facts(206), now: 1) else {
      Issue.record("refused")
      return
    }
    #expect(
      !actions.contains { if case .startTransfer = $0 { true } else { false } }, "none before the proof")
    #expect(
      machine.receiveBody(1, count: 65_536, now: 2) == .compare(offset: 34_464, count: 65_536, last: true))
    let proven = machine.overlapChecked(1, matched: true, now: 3)
    #expect(machine.pendingProof == nil)
    #expect(proven.contains { if case .startTransfer = $0 { true } else { false } }, "then more connections")
    #expect(
      machine.receiveBody(1, count: 10, now: 4)
        == .write(offset: 100_000, count: 10, hashInline: true, flushDue: false, stopAfter: false))
  }

  /// Different bytes, a whole file (no ranges), a file shorter than the partial: each fails
  /// with the partial left as it was; none starts over.
  static let refusals: [(ResponseFacts, matched: Bool?, word: String)] = [
    (facts(206), false, "differ"),
    (facts(200), nil, "whole file"),
    (facts(416, total: 30_000), nil, "shorter than the partial"),
  ]

  @Test(arguments: 0..<refusals.count)
  func anythingElseFailsAndKeepsTheFile(_ index: Int) throws {
    let (reply, matched, word) = Self.refusals[index]
    var machine = Self.machine()
    _ = machine.begin(.foreignPartial(Self.foreign), now: 0)
    if let matched {
      _ = machine.receiveHead(1, reply, now: 1)
      _ = machine.receiveBody(1, count: 100, now: 2)
      #expect(machine.overlapChecked(1, matched: matched, now: 3) == [.cancelTransfers([1])])
    } else {
      guard case .decided(.abort, _, let actions) = machine.receiveHead(1, reply, now: 1) else {
        Issue.record("\(word): not refused")
        return
      }
      #expect(actions == [.cancelTransfers([1])])
    }
    let error = try #require(Self.failure(&machine))
    #expect(error.underlying is UnprovenPartial)
    #expect(error.category == .fileSystem && error.message.contains(word), "\(error.message)")
    #expect(error.message.contains("left as it was") && error.hint == LibraryWording.replaceForeignPartial)
  }

  /// A Haul partial of a server without validators still starts over when the bytes differ:
  /// the rule above is for partials Haul did not make.
  @Test func aHaulPartialStillStartsOver() {
    var machine = Self.machine()
    _ = machine.begin(.opened(Self.foreign), now: 0)
    _ = machine.receiveHead(1, Self.facts(206), now: 1)
    _ = machine.receiveBody(1, count: 100, now: 2)
    _ = machine.overlapChecked(1, matched: false, now: 3)
    let actions = machine.transferEnded(
      1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 9)
    #expect(actions.contains { if case .emit(.restarted) = $0 { true } else { false } }, "\(actions)")
  }

  /// A directory destination: the first request asks for the whole file to learn its name.
  /// When the named target holds bytes, that answer is dropped and the missing bytes are asked
  /// for, so nothing held is fetched again.
  @Test func aNamedTargetHoldingBytesIsAskedForTheRest() {
    var machine = Self.machine()
    let begun = machine.begin(.unnamed, now: 0)
    guard case .startTransfer(1, let first)? = begun.last else {
      Issue.record("no request")
      return
    }
    #expect(first.range == nil)
    let whole = Self.facts(200)
    #expect(machine.receiveHead(1, whole, now: 1) == .nameTarget("f"))
    var saved = Self.foreign
    saved.totalBytes = 200_000
    saved.etag = "\"v\""
    guard case .decided(.abort, _, let ending) = machine.targetNamed(1, .opened(saved), whole, now: 2) else {
      Issue.record("the whole answer was used")
      return
    }
    #expect(ending == [.cancelTransfers([1])])
    #expect(machine.resumedFrom == 100_000)
    let next = machine.transferEnded(
      1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 3)
    guard case .startTransfer(let id, let plan)? = next.last else {
      Issue.record("no new request: \(next)")
      return
    }
    #expect(plan.range == "bytes=100000-" && plan.ifRange == "\"v\"")
    #expect(!next.contains { if case .emit(.restarted) = $0 { true } else { false } })
    guard
      case .decided(.deliver, _, let actions) = machine.receiveHead(
        id, Self.facts(206, first: 100_000), now: 4)
    else {
      Issue.record("the rest was refused")
      return
    }
    #expect(actions.contains(.announceStart(resumedFrom: 100_000, totalBytes: 200_000, finalURL: Self.url)))
  }

  /// A whole file in answer to If-Range with another ETag: the file changed, and a server that
  /// says it serves ranges keeps its connections. Without If-Range it is taken not to.
  @Test(arguments: [(true, true), (false, false)])
  func aChangedFileKeepsRanges(_ sendsIfRange: Bool, _ supported: Bool) {
    var machine = Self.machine(connections: 4)
    var saved = Self.foreign
    saved.totalBytes = 200_000
    if sendsIfRange { saved.etag = "\"old\"" }
    _ = machine.begin(.opened(saved), now: 0)
    guard case .decided(.deliver, _, _) = machine.receiveHead(1, Self.facts(200, etag: "\"new\""), now: 1)
    else {
      Issue.record("refused")
      return
    }
    #expect(machine.rangesSupported == supported)
  }
}
