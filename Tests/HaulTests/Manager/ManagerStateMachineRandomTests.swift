import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// Seeded random sequences of commands and run ends against the invariants the manager relies
/// on; a failing seed replays exactly.
@Suite("manager state machine: random commands")
struct ManagerStateMachineRandomTests {
  typealias Machine = ManagerStateMachine

  struct Model {
    var machine = Machine(records: [], limit: 2, holding: false)
    var random: SplitMix64
    var nextID: UInt64 = 1
    var issues: [String] = []

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func pick<T>(_ values: [T]) -> T? {
      values.isEmpty ? nil : values[Int.random(in: 0..<values.count, using: &random)]
    }

    var ids: [DownloadID] { machine.order.ids }

    /// Applies a transition and grants its claims in queue order, as a catalog would.
    mutating func run(_ transition: Machine.Transition?) {
      guard let transition else { return }
      var actions = machine.apply(transition)
      var index = 0
      while index < actions.count {
        if case .setRateLimit(let id, _) = actions[index], machine.runs[id] != .running {
          issues.append("a rate limit for \(id), which does not run")
        }
        if case .claim(let count) = actions[index] {
          if count < 1 || machine.runs.count + count > machine.limit {
            issues.append("claimed \(count) with \(machine.runs.count) running, limit \(machine.limit)")
          }
          let granted = machine.order.slots.compactMap { machine.records[$0.id] }
            .filter { $0.state == .queued && machine.runs[$0.id] == nil }.prefix(count)
          actions += machine.claimed(Array(granted))
        }
        index += 1
      }
    }

    mutating func step() {
      let id = pick(ids)
      switch Int.random(in: 0..<12, using: &random) {
      case 0:
        let count = Int.random(in: 1...3, using: &random)
        let new = (0..<count).map { _ in
          defer { nextID += 1 }
          return Queue.record(nextID, position: 0)
        }
        let position = pick([QueuePosition.front, .end, .index(1), .fromEnd(-1)]) ?? .end
        run(try? machine.add(new, at: position, paused: Bool.random(using: &random)))
      case 1: run(id.flatMap { try? machine.pause([$0]) })
      case 2: run(id.flatMap { try? machine.resume([$0]) })
      case 3: run(id.flatMap { try? machine.cancel([$0], discard: Bool.random(using: &random)) })
      case 4: run(id.flatMap { try? machine.remove([$0], discard: Bool.random(using: &random)) })
      case 5: run(id.flatMap { try? machine.forget([$0]) })
      case 6:
        let position = pick([QueuePosition.front, .end, .offset(1), .offset(-2), .fromEnd(-1)]) ?? .end
        run(id.flatMap { try? machine.move($0, to: position).0 })
      case 7: run(Machine.Transition(actions: machine.setLimit(Int.random(in: 1...4, using: &random))))
      case 8, 9:
        guard let ended = pick(Array(machine.runs.keys).sorted()) else { return }
        let outcome =
          pick([
            Machine.RunOutcome.completed(Queue.result(ended.rawValue)), .failed(HaulError(.network, "x")),
            .stopped,
          ]) ?? .stopped
        run(machine.runEnded(ended, outcome, progress: Queue.progress(ended.rawValue), now: 1))
      case 10:
        // Sometimes the rate limit alone, which a running download takes as it goes.
        var options = Queue.record(1).options
        options.rateLimit = Bool.random(using: &random) ? nil : 1_000
        let same = Bool.random(using: &random)
        run(
          id.flatMap {
            try? machine.changeOptions(
              $0, to: options, secrets: [], credentialsComplete: true, sameInMemory: same)
          })
      default: run(id.flatMap { try? machine.start($0) })
      }
    }

    mutating func check(_ when: String) {
      let records = machine.records
      if machine.queued != Set(records.values.filter { $0.state == .queued }.map(\.id)) {
        issues.append("\(when): the queued set is not the queued records")
      }
      let slots = machine.order.slots
      if slots != slots.sorted() || Set(slots.map(\.id)) != Set(records.keys) || slots.count != records.count
      {
        issues.append("\(when): the order does not match the records")
      }
      for (id, phase) in machine.runs where phase == .running && records[id]?.state != .active {
        issues.append("\(when): \(id) runs but is \(String(describing: records[id]?.state))")
      }
      for record in records.values where record.state == .active && machine.runs[record.id] == nil {
        issues.append("\(when): \(record.id) is active without a run")
      }
      if machine.pendingClaim != nil { issues.append("\(when): a claim was left pending") }
      let runnable = records.values.contains { $0.state == .queued && machine.runs[$0.id] == nil }
      if runnable, machine.runs.count < machine.limit {
        issues.append("\(when): a slot is free and a download waits for it")
      }
      if machine.isIdle != (machine.runs.isEmpty && machine.queued.isEmpty) {
        issues.append("\(when): idle is \(machine.isIdle)")
      }
    }
  }

  @Test(arguments: 0..<24 as Range<UInt64>)
  func invariantsHoldThroughRandomCommands(seed: UInt64) {
    var model = Model(seed: 0xC0FFEE + seed)
    for step in 0..<400 {
      model.step()
      model.check("seed \(seed), step \(step)")
      if model.issues.count > 3 { break }
    }
    // Every run ends: the queue drains to idle (complete, failed, removed or paused).
    var rounds = 0
    while let id = model.machine.runs.keys.sorted().first, rounds < 10_000 {
      let outcome = Machine.RunOutcome.completed(Queue.result(id.rawValue))
      model.run(model.machine.runEnded(id, outcome, progress: Queue.progress(id.rawValue), now: 2))
      model.check("seed \(seed), draining")
      rounds += 1
    }
    #expect(model.machine.isIdle, "seed \(seed): not idle after every run ended")
    #expect(model.issues.isEmpty, "\(model.issues.prefix(4).joined(separator: "\n"))")
  }
}
