import Testing

@testable import HaulCore

/// A rerun of a finished download asks the server whether its copy is still the same. When it
/// cannot tell (an error status, no connection), the file is still complete: the download ends
/// already complete, saying why the server was not checked, without retries.
@Suite struct FinishedCheckTests {
  typealias T = DownloadMachineTests
  static let finished = T.state(total: 1000, held: [ByteRange(start: 0, end: 1000)])

  static func end(_ actions: [DownloadAction]) -> DownloadEnding? {
    actions.compactMap { if case .end(let ending) = $0 { ending } else { nil } }.first
  }

  static func started() -> DownloadMachine {
    var machine = T.machine()
    _ = machine.begin(.finished(Self.finished), now: 0)
    return machine
  }

  @Test(arguments: [
    (404, "the server answered 404 Not Found"), (401, "the server answered 401 Unauthorized"),
    (503, "the server answered 503 Service Unavailable"),
  ])
  func anErrorStatusLeavesItCompleteUnchecked(status: Int, why: String) {
    var machine = Self.started()
    guard case .decided(.abort, _, let actions) = machine.receiveHead(1, T.facts(status), now: 1) else {
      Issue.record("the response was not refused")
      return
    }
    let ended = actions + machine.transferEnded(1, failure: nil, now: 2)
    #expect(Self.end(ended) == .alreadyComplete(changed: false, notChecked: why, Self.finished), "\(ended)")
  }

  @Test func noConnectionLeavesItCompleteUncheckedWithoutRetries() {
    var machine = Self.started()
    let refused = TransportFailure(kind: .connect, message: "Connection refused", code: 7)
    let actions = machine.transferEnded(1, failure: refused, now: 1)
    guard case .alreadyComplete(false, let why?, _)? = Self.end(actions) else {
      Issue.record("not ended already complete: \(actions)")
      return
    }
    #expect(why.contains("Connection refused"))
    #expect(!actions.contains { if case .scheduleRetry = $0 { true } else { false } })
  }

  /// The server's answer about its version still decides, as before.
  @Test func theSameFileIsCompleteAndChecked() {
    var machine = Self.started()
    let same = T.facts(416, range: .unsatisfied(total: 1000))
    guard case .decided(.abort, _, let actions) = machine.receiveHead(1, same, now: 1) else {
      Issue.record("the response was not refused")
      return
    }
    let ended = actions + machine.transferEnded(1, failure: nil, now: 2)
    #expect(Self.end(ended) == .alreadyComplete(changed: false, notChecked: nil, Self.finished), "\(ended)")
  }
}
