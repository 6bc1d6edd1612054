import Testing

@testable import HaulCore

/// Issue 11 part 4: bytes held from another URL (a moved or re-signed link) are continued only
/// when the new URL's response proves it serves the same file; otherwise the download fails
/// and the partial stays as it was.
@Suite struct MovedURLTests {
  static let old = "http://old/f?sig=1"
  static let new = "http://new/f?sig=2"
  static let date = "Sun, 06 Nov 1994 08:49:37 GMT"

  static func machine(connections: Int? = 1) -> DownloadMachine {
    DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: new, fixedConnections: connections,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3),
        minimumSplit: 100, checkpointInterval: 1_000, progressInterval: 1_000))
  }

  static func saved(etag: String? = "\"a\"", lastModified: String? = nil) -> ResumeState {
    ResumeState(
      url: old, finalURL: old, totalBytes: 100_000, etag: etag, lastModified: lastModified,
      ranges: [ByteRange(start: 0, end: 40_000)])
  }

  static func facts(
    _ status: Int, first: Int64 = 40_000, total: Int64 = 100_000, etag: String? = "\"a\"",
    lastModified: String? = nil
  ) -> ResponseFacts {
    ResponseFacts(
      summary: ResponseSummary(
        status: status,
        contentRange: status == 206 ? .range(first: first, last: total - 1, total: total) : nil,
        contentLength: status == 206 ? total - first : total, etag: etag, lastModified: lastModified),
      finalURL: new, suggestedName: "f", acceptsRanges: true)
  }

  static func failure(_ machine: inout DownloadMachine, _ id: TransferID = 1) -> (HaulError, ResumeState)? {
    let actions = machine.transferEnded(
      id, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 9)
    guard case .end(.failed(let error, let state))? = actions.last else { return nil }
    #expect(!actions.contains { if case .commit = $0 { true } else { false } }, "nothing truncated")
    return (error, state)
  }

  /// Proof by the same size and strong ETag (or Last-Modified): the bytes are continued and the
  /// state names the new URL from then on.
  @Test(arguments: [
    (Optional("\"a\""), String?.none, facts(206)),
    (nil, date, facts(206, etag: nil, lastModified: date)),
  ])
  func theSameFileIsContinuedAndTheNewURLRecorded(
    _ etag: String?, _ lastModified: String?, _ reply: ResponseFacts
  ) {
    var machine = Self.machine()
    let begun = machine.begin(.opened(Self.saved(etag: etag, lastModified: lastModified)), now: 0)
    guard case .startTransfer(1, let plan)? = begun.last else {
      Issue.record("no request: \(begun)")
      return
    }
    #expect(plan.range == "bytes=40000-" && plan.ifRange == (etag ?? lastModified) && plan.overlap == 0)
    #expect(machine.pendingProof == .movedFrom(Self.old))
    guard case .decided(.deliver, _, _) = machine.receiveHead(1, reply, now: 1) else {
      Issue.record("the same file was refused")
      return
    }
    #expect(machine.pendingProof == nil)
    #expect(machine.snapshot.url == Self.new)
    #expect(
      machine.receiveBody(1, count: 10, now: 2)
        == .write(offset: 40_000, count: 10, hashInline: true, flushDue: false, stopAfter: false))
  }

  /// Anything that does not prove it: the download fails, nothing is truncated, and the state
  /// kept still names the old URL with every byte it held.
  static let refusals: [(ResponseFacts, String)] = [
    (facts(206, etag: "\"b\""), "ETag"),
    (facts(200, etag: "\"b\""), "whole file"),
    (facts(206, total: 120_000), "size"),
    (facts(206, etag: nil), "does not prove"),
    (facts(206, etag: "W/\"a\""), "ETag"),
  ]

  @Test(arguments: 0..<refusals.count)
  func anotherFileIsRefusedAndThePartialKept(_ index: Int) throws {
    let (reply, word) = Self.refusals[index]
    var machine = Self.machine()
    _ = machine.begin(.opened(Self.saved()), now: 0)
    guard case .decided(.abort, _, let actions) = machine.receiveHead(1, reply, now: 1) else {
      Issue.record("\(word): not refused")
      return
    }
    #expect(actions == [.cancelTransfers([1])])
    let (error, state) = try #require(Self.failure(&machine))
    #expect(error.message.contains("another URL") && error.message.contains(word), "\(error.message)")
    #expect(error.hint == LibraryWording.fetchMovedAnew)
    #expect(state == Self.saved(), "the partial is left as it was")
  }

  /// No validator held: the overlap proves it (and more connections wait for the proof); a
  /// difference fails instead of starting over.
  @Test func withoutValidatorsTheOverlapProvesIt() throws {
    var machine = Self.machine(connections: 3)
    let begun = machine.begin(.opened(Self.saved(etag: nil)), now: 0)
    guard case .startTransfer(1, let plan)? = begun.last else {
      Issue.record("no request")
      return
    }
    #expect(plan.overlap == 40_000 && plan.range == "bytes=0-")
    guard
      case .decided(.deliver, _, let actions) = machine.receiveHead(
        1, Self.facts(206, first: 0, etag: nil), now: 1)
    else {
      Issue.record("refused")
      return
    }
    #expect(
      !actions.contains { if case .startTransfer = $0 { true } else { false } }, "no more before the proof")
    // The response's final URL waits in the proof; the state still binds the bytes to the old.
    #expect(machine.pendingProof == .movedFrom(Self.old, finalURL: Self.new))
    #expect(machine.identity.url == Self.old && machine.identity.finalURL == Self.old)
    #expect(machine.receiveBody(1, count: 40_000, now: 2) == .compare(offset: 0, count: 40_000, last: true))
    let proven = machine.overlapChecked(1, matched: true, now: 3)
    #expect(machine.pendingProof == nil && machine.snapshot.url == Self.new)
    #expect(machine.identity.url == Self.new && machine.identity.finalURL == Self.new)
    #expect(proven.contains { if case .startTransfer = $0 { true } else { false } }, "then more connections")

    var other = Self.machine()
    _ = other.begin(.opened(Self.saved(etag: nil)), now: 0)
    _ = other.receiveHead(1, Self.facts(206, first: 0, etag: nil), now: 1)
    _ = other.receiveBody(1, count: 100, now: 2)
    #expect(other.overlapChecked(1, matched: false, now: 3) == [.cancelTransfers([1])])
    let (error, state) = try #require(Self.failure(&other))
    #expect(error.message.contains("another URL") && error.message.contains("differ"))
    #expect(state == Self.saved(etag: nil))
  }
}
