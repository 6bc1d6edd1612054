import Testing

@testable import HaulCore

/// Automatic mode undoing a step that brought nothing (`ConnectionController.Decision.stepBack`):
/// the transfers furthest from the file's start are cancelled, keep what they wrote, take no
/// new range, and the one left fetches the rest front to back.
@Suite struct StepBackTests {
  typealias Fixture = DownloadMachineTests
  static let total: Int64 = 2_000_000_000
  static let ms: UInt64 = 1_000_000

  /// A link that carries 1 GB/s whatever the number of connections (unless `share` says
  /// otherwise): each answered transfer gets its share every 10 ms; writes complete at once; a
  /// cancelled transfer ends at the next step, as does one the machine stops.
  struct Run {
    /// Whether a cancel ends its transfer as cancelled; else as if its response had just ended
    /// complete (the cancel came too late), which must not make it take a new range either.
    var cancelLands = true
    var machine = Fixture.machine(connections: nil, minimumSplit: 1_000_000)
    var plans: [TransferID: TransferPlan] = [:]
    var answered: Set<TransferID> = []
    /// Transfers to end at the next step, and how.
    var ending: [TransferID: TransportFailure?] = [:]
    var cancelled: [[TransferID]] = []
    /// The step at which they were (an index into `running`).
    var cancelledAt: Int?
    /// Transfers running after each step.
    var running: [Int] = []
    var ended: DownloadEnding?
    /// Bytes each answered transfer gets per step, given how many are answered and the limit.
    var share: (_ answered: Int, _ limit: Double?) -> Int = { answered, _ in 10_000_000 / max(1, answered) }
    /// The strictest rate limit at each moment, passed on at ticks as the executor does.
    var limit: (_ now: UInt64) -> Double? = { _ in nil }

    mutating func perform(_ actions: [DownloadAction]) {
      for action in actions {
        switch action {
        case .startTransfer(let id, let plan): plans[id] = plan
        case .cancelTransfers(let ids):
          cancelled.append(ids)
          cancelledAt = running.count
          for id in ids {
            ending[id] = .some(
              cancelLands ? TransportFailure(kind: .cancelled, message: "cancelled", code: 0) : nil)
          }
        case .end(let end): ended = end
        default: break
        }
      }
    }

    mutating func go() {
      perform(machine.begin(.opened(ResumeState(url: Fixture.url)), now: 0))
      var now: UInt64 = 0
      while ended == nil, now < 10_000 * ms {
        now += 10 * ms
        for (id, failure) in ending.sorted(by: { $0.key < $1.key }) {
          ending[id] = nil
          answered.remove(id)
          plans[id] = nil
          perform(machine.transferEnded(id, failure: failure, now: now))
        }
        for (id, plan) in plans.sorted(by: { $0.key < $1.key }) where !answered.contains(id) {
          answered.insert(id)
          let facts: ResponseFacts
          if case .segment(_, let start, let end, _) = plan.target, plan.range != nil {
            facts = Fixture.facts(
              206, range: .range(first: start, last: end - 1, total: total), length: end - start)
          } else {
            facts = Fixture.facts(200, length: total)
          }
          _ = machine.receiveHead(id, facts, now: now)
        }
        let share = self.share(answered.count, limit(now))
        let stopped = TransportFailure(kind: .aborted, message: "stopped", code: 0)
        for id in answered.sorted() where ending[id] == nil {
          switch machine.receiveBody(id, count: share, now: now) {
          case .write(let offset, let count, _, _, let stopAfter):
            perform(machine.written(id, through: offset + Int64(count), now: now))
            if stopAfter {
              ending[id] = stopped
            } else if isFilled(id) {
              ending[id] = .some(nil)
            }
          default:
            ending[id] = stopped
          }
        }
        if now % (50 * ms) == 0 {
          let cap = limit(now)
          if machine.rateCap != cap { machine.rateLimitChanged(to: cap, now: now) }
          perform(machine.tick(now: now))
        }
        running.append(plans.count)
      }
    }

    func isFilled(_ id: TransferID) -> Bool {
      guard case .running(let round) = machine.phase, let transfer = round.transfers[id] else { return true }
      if case .segmentFilled = transfer.state { return true }
      if case .segmented(let planner) = machine.layout, case .writingSegment(let segment) = transfer.state {
        return planner.active.first { $0.id == segment }.map { $0.remaining == 0 } ?? true
      }
      return false
    }
  }

  @Test(arguments: [true, false])
  func theTransfersFurthestFromTheStartAreClosedAndTheFirstFinishesAlone(cancelLands: Bool) throws {
    var run = Run(cancelLands: cancelLands)
    run.go()
    let ended = try #require(run.ended)
    guard case .complete(let state, _) = ended else {
      Issue.record("ended \(ended)")
      return
    }
    #expect(state.heldBytes == Self.total)
    // Four were tried, and the three after the first were closed at once.
    #expect(run.running.max() == 4, "\(run.running)")
    #expect(run.cancelled == [[2, 3, 4]], "\(run.cancelled)")
    // From the step back on, one transfer at a time.
    let stepBack = try #require(run.cancelledAt)
    #expect(run.running[stepBack] == 4)
    #expect(run.running[(stepBack + 1)...].allSatisfy { $0 <= 1 }, "\(run.running)")
  }

  /// A shared limit of 2 MB/s on a server that paces each connection to 50 MB/s: one
  /// connection reaches the limit and gets no company. When the limit is lifted (at 2 s, as
  /// `aria2.changeGlobalOption` or `BandwidthLimit.bytesPerSecond = nil` would), growth is
  /// tried soon rather than never, and reaches the cap within a second.
  @Test func liftingTheRateLimitAddsConnections() throws {
    var run = Run(machine: Fixture.machine(connections: nil, minimumSplit: 1_000_000, rateLimit: 2_000_000))
    let lifted = 2_000 * Self.ms
    run.limit = { now in now < lifted ? 2e6 : nil }
    run.share = { answered, limit in min(500_000, limit.map { Int($0 / 100) / max(1, answered) } ?? .max) }
    run.go()
    let end = run.ended
    let ended = try #require(
      end, "not ended after \(run.running.count) steps; most running \(run.running.max() ?? 0)")
    guard case .complete(let state, _) = ended else {
      Issue.record("ended \(ended)")
      return
    }
    #expect(state.heldBytes == Self.total)
    // Step i is at (i + 1) × 10 ms.
    #expect(run.running[..<199].allSatisfy { $0 <= 1 }, "\(run.running[..<199])")
    let sixteen = try #require(run.running.firstIndex { $0 >= 16 }, "\(run.running)")
    #expect(sixteen >= 239 && sixteen < 290, "16 transfers at \((sixteen + 1) * 10) ms")
    #expect(run.cancelled.isEmpty, "\(run.cancelled)")
  }
}
