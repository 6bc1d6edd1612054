import Testing

@testable import HaulCore

/// Issue 11 part 1: a request that continues held bytes no strong validator binds asks for
/// up to 64 KiB of them again, and nothing after them is written before they matched.
@Suite struct OverlapCheckTests {
  static let url = "http://h/f"
  static let size: Int64 = 1 << 20

  static func machine(connections: Int? = 1) -> DownloadMachine {
    DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: url, fixedConnections: connections,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3),
        minimumSplit: 100, checkpointInterval: 1_000, progressInterval: 1_000))
  }

  static func saved(
    held: [ByteRange], total: Int64? = size, etag: String? = nil, lastModified: String? = nil
  ) -> ResumeState {
    ResumeState(
      url: url, finalURL: url, totalBytes: total, etag: etag, lastModified: lastModified, ranges: held)
  }

  static func facts(_ first: Int64, total: Int64 = size, etag: String? = nil) -> ResponseFacts {
    ResponseFacts(
      summary: ResponseSummary(
        status: 206, contentRange: .range(first: first, last: total - 1, total: total),
        contentLength: total - first, etag: etag),
      finalURL: url, suggestedName: "f", acceptsRanges: true)
  }

  static func plans(_ actions: [DownloadAction]) -> [TransferPlan] {
    actions.compactMap { if case .startTransfer(_, let plan) = $0 { plan } else { nil } }
  }

  /// The validators held and the bytes held → the overlap asked for and the Range sent.
  static let table:
    [(
      etag: String?, lastModified: String?, held: [ByteRange], overlap: Int64, range: String, ifRange: String?
    )] =
      [
        (nil, nil, [ByteRange(start: 0, end: 300_000)], 65_536, "bytes=234464-", nil),
        (nil, nil, [ByteRange(start: 0, end: 1_000)], 1_000, "bytes=0-", nil),
        ("W/\"w\"", nil, [ByteRange(start: 0, end: 300_000)], 65_536, "bytes=234464-", nil),
        ("\"s\"", nil, [ByteRange(start: 0, end: 300_000)], 0, "bytes=300000-", "\"s\""),
        (
          nil, "Sun, 06 Nov 1994 08:49:37 GMT", [ByteRange(start: 0, end: 300_000)], 0, "bytes=300000-",
          "Sun, 06 Nov 1994 08:49:37 GMT"
        ),
        (
          "W/\"w\"", "Sun, 06 Nov 1994 08:49:37 GMT", [ByteRange(start: 0, end: 300_000)], 0, "bytes=300000-",
          "Sun, 06 Nov 1994 08:49:37 GMT"
        ),
        // A gap after a range held from the middle: the bytes before it are repeated.
        (
          nil, nil, [ByteRange(start: 0, end: 10), ByteRange(start: 200_000, end: 500_000)], 10,
          "bytes=0-199999",
          nil
        ),
      ]

  @Test(arguments: 0..<table.count)
  func theOverlapIsAskedOnlyWithoutAStrongValidator(_ index: Int) throws {
    let row = Self.table[index]
    var machine = Self.machine()
    let plan = try #require(
      Self.plans(
        machine.begin(
          .opened(Self.saved(held: row.held, etag: row.etag, lastModified: row.lastModified)), now: 0)
      ).first)
    #expect(plan.overlap == row.overlap)
    #expect(plan.range == row.range)
    #expect(plan.ifRange == row.ifRange)
    #expect(plan.offset == plan.dataStart - row.overlap)
  }

  /// Matching bytes are compared, not written; what follows them is written where it belongs.
  @Test func aMatchingOverlapAppends() throws {
    var machine = Self.machine()
    let plan = try #require(
      Self.plans(machine.begin(.opened(Self.saved(held: [ByteRange(start: 0, end: 300_000)])), now: 0)).first)
    let first = plan.offset
    guard case .decided(.deliver, false, _) = machine.receiveHead(1, Self.facts(first), now: 1) else {
      Issue.record("the response was refused")
      return
    }
    #expect(
      machine.receiveBody(1, count: 60_000, now: 2) == .compare(offset: first, count: 60_000, last: false))
    #expect(
      machine.receiveBody(1, count: 60_000, now: 3)
        == .compare(offset: first + 60_000, count: 5_536, last: true))
    #expect(machine.receiveBody(1, count: 10, now: 4) == .stale, "nothing before the verdict")
    #expect(machine.overlapChecked(1, matched: true, now: 5) == [])
    #expect(
      machine.receiveBody(1, count: 54_464, now: 6)
        == .write(offset: 300_000, count: 54_464, hashInline: true, flushDue: false, stopAfter: false))
    #expect(machine.heldBytes == 300_000, "the overlap adds nothing to what is held")
  }

  /// A difference: the resource changed; nothing is written and the data starts over from
  /// byte 0 with a `restarted` event that says so.
  @Test func aDifferentOverlapRestartsFromZero() throws {
    var machine = Self.machine()
    let plan = try #require(
      Self.plans(machine.begin(.opened(Self.saved(held: [ByteRange(start: 0, end: 300_000)])), now: 0)).first)
    _ = machine.receiveHead(1, Self.facts(plan.offset), now: 1)
    #expect(
      machine.receiveBody(1, count: 1_000, now: 2) == .compare(offset: plan.offset, count: 1_000, last: false)
    )
    #expect(machine.overlapChecked(1, matched: false, now: 3) == [.cancelTransfers([1])])
    #expect(machine.receiveBody(1, count: 10, now: 4) == .stale)
    let actions = machine.transferEnded(
      1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 5)
    guard case .emit(.restarted(let reason))? = actions.first else {
      Issue.record("no restart: \(actions)")
      return
    }
    #expect(reason.contains("changed"))
    #expect(actions.contains(.commit(ResumeState(url: Self.url), truncatingTo: 0)))
    #expect(Self.plans(actions).last?.range == nil, "the whole file again")
  }

  /// A response that ends inside the overlap writes nothing and is retried.
  @Test func aResponseEndingInsideTheOverlapIsAFailureForNow() throws {
    var machine = Self.machine()
    let plan = try #require(
      Self.plans(machine.begin(.opened(Self.saved(held: [ByteRange(start: 0, end: 300_000)])), now: 0)).first)
    _ = machine.receiveHead(1, Self.facts(plan.offset), now: 1)
    _ = machine.receiveBody(1, count: 100, now: 2)
    let actions = machine.transferEnded(1, failure: nil, now: 3)
    #expect(actions.contains { if case .scheduleRetry = $0 { true } else { false } })
    #expect(machine.heldBytes == 300_000)
  }

  /// A resumed stream of unknown size repeats its tail too, and learns the size from the 206.
  @Test func aResumedStreamRepeatsItsTail() throws {
    var machine = Self.machine()
    let plan = try #require(
      Self.plans(
        machine.begin(.opened(Self.saved(held: [ByteRange(start: 0, end: 100_000)], total: nil)), now: 0)
      ).first)
    #expect(plan.range == "bytes=34464-" && plan.overlap == 65_536)
    _ = machine.receiveHead(1, Self.facts(34_464, total: 200_000), now: 1)
    #expect(
      machine.receiveBody(1, count: 65_536, now: 2) == .compare(offset: 34_464, count: 65_536, last: true))
    _ = machine.overlapChecked(1, matched: true, now: 3)
    #expect(
      machine.receiveBody(1, count: 100, now: 4)
        == .write(offset: 100_000, count: 100, hashInline: true, flushDue: false, stopAfter: false))
  }

  /// Several connections: a later range that continues held bytes of an earlier session is
  /// checked too; a fresh download's splits are not (nothing written precedes them).
  @Test func laterRangesThatContinueHeldBytesAreCheckedToo() throws {
    var machine = Self.machine(connections: 3)
    let held = [ByteRange(start: 0, end: 100_000), ByteRange(start: 500_000, end: 600_000)]
    let first = try #require(Self.plans(machine.begin(.opened(Self.saved(held: held)), now: 0)).first)
    #expect(first.overlap == 65_536 && first.dataStart == 100_000)
    guard case .decided(.deliver, _, let actions) = machine.receiveHead(1, Self.facts(first.offset), now: 1)
    else {
      Issue.record("refused")
      return
    }
    let later = Self.plans(actions) + Self.plans(machine.tick(now: 1_000_000))
    let afterHeld = try #require(later.first { $0.dataStart == 600_000 })
    #expect(afterHeld.overlap == 65_536)
    #expect(later.filter { $0.dataStart != 600_000 }.allSatisfy { $0.overlap == 0 })

    var fresh = Self.machine(connections: 3)
    _ = fresh.begin(.opened(ResumeState(url: Self.url)), now: 0)
    guard
      case .decided(.deliver, _, let more) = fresh.receiveHead(
        1,
        ResponseFacts(
          summary: ResponseSummary(status: 200, contentLength: Self.size), finalURL: Self.url,
          suggestedName: "f",
          acceptsRanges: true),
        now: 1)
    else {
      Issue.record("refused")
      return
    }
    #expect(!Self.plans(more).isEmpty && Self.plans(more).allSatisfy { $0.overlap == 0 })
  }
}
