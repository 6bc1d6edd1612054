import Testing

@testable import HaulCore

/// A target that takes bytes in order only (standard output, a pipe) cannot start over once
/// bytes went out: where a file would start over, the download fails and says why.
@Suite struct InOrderTargetTests {
  typealias T = DownloadMachineTests

  static func machine(inOrderOnly: Bool) -> DownloadMachine {
    var configuration = DownloadMachine.Configuration(
      recordedURL: T.url, fixedConnections: 1,
      retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3), minimumSplit: 100)
    configuration.writesInOrderOnly = inOrderOnly
    return DownloadMachine(configuration)
  }

  /// 400 bytes held, no validator: the resume asks again for the bytes before its range.
  static let held = ResumeState(
    url: T.url, finalURL: T.url, totalBytes: 1000, ranges: [ByteRange(start: 0, end: 400)])

  static func failure(_ actions: [DownloadAction]) -> HaulError? {
    actions.compactMap { if case .end(.failed(let error, _)) = $0 { error } else { nil } }.first
  }

  @Test(arguments: [false, true])
  func theWholeFileAgain(inOrderOnly: Bool) {
    var machine = Self.machine(inOrderOnly: inOrderOnly)
    _ = machine.begin(.opened(Self.held), now: 0)
    guard
      case .decided(let disposition, _, let actions) = machine.receiveHead(
        1, T.facts(200, length: 1000, etag: nil), now: 1)
    else {
      Issue.record("no decision")
      return
    }
    if inOrderOnly {
      #expect(disposition == .abort)
      let ended = machine.transferEnded(
        1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 2)
      let error = Self.failure(actions + ended)
      #expect(error?.category == .network)
      #expect(
        error?.message.contains("the 400 B already written to the output cannot be taken back") == true,
        "\(String(describing: error))")
    } else {
      #expect(disposition == .deliver, "a file starts over")
      #expect(Self.failure(actions) == nil)
    }
  }

  @Test func bytesThatDifferFromThoseWrittenStopTheStream() {
    var machine = Self.machine(inOrderOnly: true)
    _ = machine.begin(.opened(Self.held), now: 0)
    let first = 400 - DownloadMachine.overlapLength > 0 ? 400 - DownloadMachine.overlapLength : 0
    _ = machine.receiveHead(
      1, T.facts(206, range: .range(first: first, last: 999, total: 1000), length: 1000 - first, etag: nil),
      now: 1)
    _ = machine.overlapChecked(1, matched: false, now: 2)
    let actions = machine.transferEnded(
      1, failure: TransportFailure(kind: .cancelled, message: "", code: 0), now: 3)
    #expect(Self.failure(actions)?.message.contains("cannot be taken back") == true, "\(actions)")
  }

  /// Nothing written yet: a stream may still take the whole file from its start.
  @Test func nothingWrittenYetStartsOver() {
    var machine = Self.machine(inOrderOnly: true)
    _ = machine.begin(.opened(ResumeState(url: T.url)), now: 0)
    guard
      case .decided(.deliver, _, _) = machine.receiveHead(1, T.facts(200, length: 1000, etag: nil), now: 1)
    else {
      Issue.record("refused")
      return
    }
  }
}
