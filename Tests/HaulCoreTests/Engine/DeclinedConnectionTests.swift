import Testing

@testable import HaulCore

/// A server that takes only so many connections from one client (a `503` or `429` to the
/// next, or a refused connection): the connections it declines end without failing the
/// round, their ranges go back to the ones delivering, and no more are asked for.
@Suite struct DeclinedConnectionTests {
  typealias T = DownloadMachineTests

  /// A fresh 3,000-byte download with three connections: the first delivers, two more start.
  static func threeConnections() -> (DownloadMachine, added: [TransferID]) {
    var machine = T.machine(connections: 3, minimumSplit: 100)
    _ = machine.begin(.opened(ResumeState(url: T.url)), now: 0)
    guard case .decided(.deliver, _, let actions) = machine.receiveHead(1, T.facts(200, length: 3000), now: 1)
    else { return (machine, []) }
    return (machine, T.started(actions))
  }

  static func segments(_ machine: DownloadMachine) -> [SegmentPlanner.Segment] {
    guard case .segmented(let planner) = machine.layout else { return [] }
    return planner.active.sorted { $0.start < $1.start }
  }

  @Test(arguments: [503, 429])
  func aDeclinedExtraConnectionGivesItsRangeBackToTheOneDelivering(status: Int) {
    var (machine, added) = Self.threeConnections()
    #expect(added == [2, 3])
    _ = machine.receiveBody(1, count: 100, now: 2)
    let before = Self.segments(machine)
    #expect(before.count == 3)
    let first = before.first?.id
    // The range split off next to the first transfer's goes back to it: its whole-file
    // response runs on, so it need not stop there.
    let nextToFirst = before[1].start
    let declinedID: TransferID =
      machine.round?.transfers.first { _, transfer in
        if case .segment(_, let start, _, _) = transfer.plan.target { start == nextToFirst } else { false }
      }?.key ?? 0
    #expect(
      machine.receiveHead(declinedID, T.facts(status, retryAfter: .seconds(5)), now: 3)
        == .decided(.discard, checksRange: false, []))
    #expect(machine.controller.serverLimit?.count == 1)
    #expect(machine.transferEnded(declinedID, failure: nil, now: 4) == [], "no next range, no failure")
    #expect(Self.segments(machine).first { $0.id == first }?.end == before[2].start)
    // No connection is added for a while; then more are tried again.
    #expect(T.started(machine.tick(now: 5_000_000_000)).isEmpty)
    #expect(T.started(machine.tick(now: 11_000_000_000)).count == 1)
    #expect(machine.round?.failures == 0)
  }

  @Test func aRefusedExtraConnectionIsDeclinedToo() {
    var (machine, added) = Self.threeConnections()
    _ = machine.receiveBody(1, count: 100, now: 2)
    let refused = TransportFailure(kind: .connect, message: "Connection refused", code: 7)
    for id in added {
      #expect(T.started(machine.transferEnded(id, failure: refused, now: 3)).isEmpty)
    }
    #expect(machine.controller.serverLimit?.count == 1)
    #expect(machine.round?.failures == 0)
    // The first transfer's response now covers the whole file: it completes the download.
    #expect(Self.segments(machine).map(\.end) == [3000])
    guard case .write(100, 2900, _, _, _) = machine.receiveBody(1, count: 2900, now: 5) else {
      Issue.record("the rest of the file has no slot")
      return
    }
    _ = machine.written(1, through: 3000, now: 6)
    guard case .end(.complete)? = machine.transferEnded(1, failure: nil, now: 7).last else {
      Issue.record("the download did not complete")
      return
    }
  }

  /// Alone, the same answer is the server's, not a limit: the round retries after its delay.
  @Test func theOnlyConnectionDeclinedIsRetried() {
    var machine = T.machine(connections: 3, minimumSplit: 100)
    _ = machine.begin(.opened(ResumeState(url: T.url)), now: 0)
    #expect(machine.receiveHead(1, T.facts(503), now: 1) == .decided(.discard, checksRange: false, []))
    let actions = machine.transferEnded(1, failure: nil, now: 2)
    #expect(actions.contains { if case .scheduleRetry = $0 { true } else { false } }, "\(actions)")
    #expect(machine.controller.serverLimit == nil)
  }

  /// A failure of a connection that had delivered is not a decline: the round notes it.
  @Test func aBrokenDeliveringConnectionStillCounts() {
    var (machine, added) = Self.threeConnections()
    _ = machine.receiveBody(1, count: 100, now: 2)
    let second = added[0]
    guard case .segment(_, let start, let end, _)? = machine.round?.transfers[second]?.plan.target else {
      Issue.record("no segment for the second transfer")
      return
    }
    let head = machine.receiveHead(
      second, T.facts(206, range: .range(first: start, last: end - 1, total: 3000), length: end - start),
      now: 3)
    #expect(head == .decided(.deliver, checksRange: false, []))
    _ = machine.receiveBody(second, count: 10, now: 3)
    let broken = TransportFailure(kind: .interrupted, message: "reset", code: 56)
    _ = machine.transferEnded(second, failure: broken, now: 4)
    #expect(machine.round?.failures == 1)
    #expect(machine.controller.serverLimit == nil)
  }
}

extension DownloadMachine {
  /// The running round, if any.
  fileprivate var round: Round? {
    if case .running(let round) = phase { round } else { nil }
  }
}
