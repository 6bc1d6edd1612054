import Testing

@testable import HaulCore

/// Issue 11 part 4, last rule: a `200` to `If-Range` that carries the strong ETag held (a CDN
/// that ignores `If-Range`) does not fetch the whole file again: the range is asked for without
/// `If-Range`, and appended only when the `206` carries that ETag and size.
@Suite struct IgnoredIfRangeTests {
  static let url = "http://h/f"
  static let etag = "\"a\""

  static func machine() -> DownloadMachine {
    DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: url, fixedConnections: 1,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3),
        minimumSplit: 100, checkpointInterval: 1_000, progressInterval: 1_000))
  }

  static func facts(_ status: Int, etag: String? = etag, total: Int64 = 1000) -> ResponseFacts {
    ResponseFacts(
      summary: ResponseSummary(
        status: status, contentRange: status == 206 ? .range(first: 400, last: total - 1, total: total) : nil,
        contentLength: status == 206 ? total - 400 : total, etag: etag),
      finalURL: url, suggestedName: "f", acceptsRanges: true)
  }

  static func begun() -> DownloadMachine {
    var machine = Self.machine()
    _ = machine.begin(
      .opened(
        ResumeState(
          url: url, finalURL: url, totalBytes: 1000, etag: etag, ranges: [ByteRange(start: 0, end: 400)])),
      now: 0)
    return machine
  }

  @Test func theRangeIsAskedAgainWithoutIfRange() throws {
    var machine = Self.begun()
    guard case .decided(.abort, false, let actions) = machine.receiveHead(1, Self.facts(200), now: 1),
      case .startTransfer(2, let plan)? = actions.first
    else {
      Issue.record("the whole response was not stopped")
      return
    }
    #expect(plan.range == "bytes=400-" && plan.ifRange == nil && plan.withoutIfRange)
    #expect(!plan.headers.contains { $0.name == "If-Range" })
    #expect(
      machine.transferEnded(1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 2) == [])
    guard case .decided(.deliver, _, _) = machine.receiveHead(2, Self.facts(206), now: 3) else {
      Issue.record("the 206 with the same ETag was refused")
      return
    }
    #expect(
      machine.receiveBody(2, count: 10, now: 4)
        == .write(offset: 400, count: 10, hashInline: true, flushDue: false, stopAfter: false))
  }

  /// The 206 asked without If-Range must carry the ETag and size: else the data starts over.
  @Test(arguments: [facts(206, etag: nil), facts(206, etag: "\"b\""), facts(200)])
  func aRangeWithoutTheETagStartsOver(_ reply: ResponseFacts) {
    var machine = Self.begun()
    _ = machine.receiveHead(1, Self.facts(200), now: 1)
    _ = machine.transferEnded(1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 2)
    let head = machine.receiveHead(2, reply, now: 3)
    if case .decided(.deliver, _, let actions) = head {
      // A whole 200 replaces from byte 0 (and says so); never an append.
      #expect(actions.contains { if case .commit(_, truncatingTo: 0) = $0 { true } else { false } })
      return
    }
    guard case .decided(.abort, _, _) = head else {
      Issue.record("\(head)")
      return
    }
    let ending = machine.transferEnded(
      2, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 4)
    #expect(ending.first.map { if case .emit(.restarted) = $0 { true } else { false } } == true, "\(ending)")
  }

  /// A 200 that does not prove the bytes held: another ETag, none, another size, or no
  /// `Accept-Ranges`, replaces from byte 0 as before (no request without `If-Range`).
  @Test(arguments: [
    facts(200, etag: "\"b\""), facts(200, etag: nil), facts(200, total: 1200),
    ResponseFacts(
      summary: ResponseSummary(status: 200, contentRange: nil, contentLength: 1000, etag: etag),
      finalURL: url, suggestedName: "f", acceptsRanges: false),
  ])
  func aWholeResponseThatDoesNotProveTheBytesReplaces(_ reply: ResponseFacts) {
    var machine = Self.begun()
    guard case .decided(.deliver, _, let actions) = machine.receiveHead(1, reply, now: 1) else {
      Issue.record("the whole response was refused")
      return
    }
    #expect(actions.contains { if case .commit(_, truncatingTo: 0) = $0 { true } else { false } })
    #expect(!actions.contains { if case .startTransfer = $0 { true } else { false } })
  }

  /// A weak ETag held binds nothing (RFC 9110 forbids it in If-Range): a 200 of that weak
  /// ETag replaces from byte 0.
  @Test func aWeakETagHeldIsNotAskedAgain() {
    var machine = Self.machine()
    _ = machine.begin(
      .opened(
        ResumeState(
          url: Self.url, finalURL: Self.url, totalBytes: 1000, etag: "W/\"a\"",
          ranges: [ByteRange(start: 0, end: 400)])),
      now: 0)
    let head = machine.receiveHead(1, Self.facts(200, etag: "W/\"a\""), now: 1)
    if case .decided(_, _, let actions) = head {
      #expect(!actions.contains { if case .startTransfer = $0 { true } else { false } }, "\(actions)")
    } else {
      Issue.record("\(head)")
    }
  }
}
