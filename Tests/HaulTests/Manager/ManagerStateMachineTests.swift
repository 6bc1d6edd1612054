import Foundation
import Testing

@testable import Haul
@testable import HaulCore

/// Records and machines for the pure tests: ids 1, 2, 3 … at positions 1×gap, 2×gap …
enum Queue {
  static func id(_ number: UInt64) -> DownloadID { DownloadID(rawValue: number) ?? .placeholder }

  static func record(_ number: UInt64, _ state: DownloadState = .queued, position: Int64? = nil)
    -> DownloadRecord
  {
    DownloadRecord(
      id: id(number), url: "http://h/\(number)", destination: .file(URL(fileURLWithPath: "/d/\(number)")),
      options: StoredOptions.split(DownloadOptions()).0, state: state,
      position: position ?? Int64(number) * QueueOrder.gap)
  }

  static func machine(_ states: [DownloadState], limit: Int = 4, holding: Bool = false) -> ManagerStateMachine
  {
    ManagerStateMachine(
      records: states.enumerated().map { record(UInt64($0.offset + 1), $0.element) }, limit: limit,
      holding: holding)
  }

  /// Applies `transition`, then grants every claim it leads to in queue order, as a catalog would.
  static func run(_ machine: inout ManagerStateMachine, _ transition: ManagerStateMachine.Transition)
    -> [ManagerStateMachine.Action]
  {
    var actions = machine.apply(transition)
    var index = 0
    while index < actions.count {
      if case .claim(let count) = actions[index] {
        let granted = machine.ordered.filter { $0.state == .queued && machine.runs[$0.id] == nil }.prefix(
          count)
        actions += machine.claimed(Array(granted))
      }
      index += 1
    }
    return actions
  }

  static func started(_ actions: [ManagerStateMachine.Action]) -> [UInt64] {
    actions.compactMap { if case .start(let record) = $0 { record.id.rawValue } else { nil } }
  }

  static func progress(_ number: UInt64, bytes: Int64 = 10, file: String? = nil) -> ProgressRecord {
    ProgressRecord(id: id(number), bytes: bytes, totalBytes: 100, file: file ?? "/d/\(number)")
  }

  static func result(_ number: UInt64) -> DownloadResult {
    DownloadResult(
      file: URL(fileURLWithPath: "/d/\(number)"), totalBytes: 100, bytesReceived: 100, resumedFrom: 0,
      finalURL: "http://u:pw@h/\(number)", wasAlreadyComplete: false, remoteChanged: false, duration: 1,
      sha256: "ab")
  }
}

@Suite("manager state machine")
struct ManagerStateMachineTests {
  typealias Machine = ManagerStateMachine

  @Test(arguments: [
    // (limit, queued downloads, holding) → downloads started, in queue order
    (2, 5, false, [1, 2] as [UInt64]),
    (4, 2, false, [1, 2]),
    (4, 0, false, []),
    (3, 5, true, []),
  ])
  func launchStartsUpToTheLimitInQueueOrder(limit: Int, count: Int, holding: Bool, expected: [UInt64]) {
    var machine = Queue.machine(Array(repeating: .queued, count: count), limit: limit, holding: holding)
    let actions = Queue.run(&machine, machine.launch(.resume))
    #expect(Queue.started(actions) == expected)
    #expect(machine.runs.count == expected.count)
    #expect(machine.isIdle == (expected.isEmpty && (holding || count == 0)))
  }

  @Test func aClaimInFlightIsNotRepeatedAndAShortGrantWaitsForTheNextTransition() {
    var machine = Queue.machine([.queued, .queued, .queued], limit: 3)
    #expect(machine.apply(Machine.Transition()) == [.claim(3)])
    #expect(machine.apply(Machine.Transition()) == [], "a claim is in flight")
    let actions = machine.claimed([Queue.record(1)])
    #expect(Queue.started(actions) == [1])
    #expect(!actions.contains { if case .claim = $0 { true } else { false } }, "the catalog had no more")
    #expect(machine.apply(Machine.Transition()) == [.claim(2)])
    machine.claimFailed()
    #expect(machine.apply(Machine.Transition()) == [.claim(2)], "a failed claim is tried again")
  }

  @Test(arguments: [
    // state before launch, policy → state after (nil: unchanged)
    (DownloadState.active, LaunchPolicy.resume, DownloadState.queued as DownloadState?),
    (.queued, .resume, nil),
    (.paused, .resume, nil),
    (.complete, .resume, nil),
    (.failed, .resume, nil),
    (.active, .pause, .paused),
    (.queued, .pause, .paused),
    (.paused, .pause, nil),
    (.removed, .pause, nil),
    (.active, .hold, .queued),
    (.queued, .hold, nil),
  ])
  func launchPolicy(before: DownloadState, policy: LaunchPolicy, after: DownloadState?) {
    let machine = Queue.machine([before], holding: policy == .hold)
    let changes = machine.launch(policy).changes
    #expect(changes == (after.map { [.state(Queue.id(1), $0, error: nil)] } ?? []))
  }

  @Test func downloadsThatNeedCredentialsWaitPausedAfterALaunch() {
    var record = Queue.record(1, .active)
    record.secrets = .urlPassword
    var paused = Queue.record(2, .paused)
    paused.secrets = .headers
    var machine = ManagerStateMachine(records: [record, paused, Queue.record(3)], limit: 4, holding: false)
    let launch = machine.launch(.resume)
    #expect(launch.changes == [.state(Queue.id(1), .paused, error: Machine.credentialsError)])
    #expect(Queue.started(Queue.run(&machine, launch)) == [3])
    #expect(throws: HaulError.self) { try machine.resume([Queue.id(1)], missingCredentials: [Queue.id(1)]) }
    let resumed = machine.resumeAll(missingCredentials: [Queue.id(1), Queue.id(2)])
    #expect(resumed.changes.isEmpty)
    // Given again, the one that waited for them continues; the one the user paused stays paused.
    let given = try? machine.changeURL(
      Queue.id(1), to: "http://h/1", secrets: .urlPassword, credentialsComplete: true)
    #expect(given?.changes.contains(.state(Queue.id(1), .queued, error: nil)) == true)
    let other = try? machine.changeOptions(
      Queue.id(2), to: record.options, secrets: .headers, credentialsComplete: true)
    #expect(other?.changes.count == 1)
  }

  @Test func resumeAllTakesFailedDownloadsOnlyWhenAsked() {
    let machine = Queue.machine([.paused, .failed, .removed, .complete, .queued])
    // aria2's unpauseAll: paused ones only.
    #expect(machine.resumeAll().changes == [.state(Queue.id(1), .queued, error: nil)])
    // haul resume --all: failed ones too, as resume of their ids would; cancelled ones stay.
    #expect(
      machine.resumeAll(includingFailed: true).changes == [
        .state(Queue.id(1), .queued, error: nil), .state(Queue.id(2), .queued, error: nil),
      ])
    #expect(machine.resumeAll(missingCredentials: [Queue.id(2)], includingFailed: true).changes.count == 1)
  }

  /// A complete download whose finished file is gone is listed as failed: --all takes it too.
  @Test func resumeAllTakesACompleteDownloadWhoseFileIsGoneWithTheFailed() {
    let machine = Queue.machine([.complete, .complete])
    #expect(machine.resumeAll(missingFiles: [Queue.id(1)]).changes.isEmpty)
    let resumed = machine.resumeAll(missingFiles: [Queue.id(1)], includingFailed: true)
    #expect(resumed.changes.count == 1)
    #expect(resumed.actions == [.notify(.queued(Queue.id(1)))])
  }

  @Test func pauseOfAQueuedDownloadIsImmediateAndOfARunningOneWhenItsRunEnds() throws {
    var machine = Queue.machine([.queued, .queued, .queued], limit: 1)
    _ = Queue.run(&machine, machine.launch(.resume))
    let pauseQueued = try machine.pause([Queue.id(2)])
    #expect(pauseQueued.changes == [.state(Queue.id(2), .paused, error: nil)])
    #expect(pauseQueued.actions == [.notify(.paused(Queue.id(2)))])
    _ = Queue.run(&machine, pauseQueued)

    let pauseRunning = try machine.pause([Queue.id(1)])
    #expect(pauseRunning.actions == [.stop(Queue.id(1), .pause)], "announced when the run has ended")
    #expect(Queue.started(Queue.run(&machine, pauseRunning)).isEmpty, "the slot is busy until the run ends")
    #expect(machine.runs[Queue.id(1)] == .stopping(.pause))

    let ended = machine.runEnded(Queue.id(1), .stopped, progress: Queue.progress(1, bytes: 40), now: 5)
    #expect(
      ended.changes == [
        .finish(Queue.id(1), RunResult(state: .paused, bytes: 40, totalBytes: 100, file: "/d/1"))
      ])
    #expect(ended.actions == [.notify(.paused(Queue.id(1)))])
    #expect(Queue.started(Queue.run(&machine, ended)) == [3], "the next queued one takes the slot")
  }

  @Test func pauseIsAllOrNothing() {
    let machine = Queue.machine([.queued, .complete])
    #expect(throws: HaulError.self) { try machine.pause([Queue.id(1), Queue.id(2)]) }
    #expect(throws: HaulError.self) { try machine.pause([Queue.id(1), Queue.id(9)]) }
    #expect(machine.pauseAll().changes == [.state(Queue.id(1), .paused, error: nil)])
  }

  @Test(arguments: [
    // state, missing file → queued? (nil: refused)
    (DownloadState.paused, false, true as Bool?),
    (.failed, false, true),
    (.removed, false, true),
    (.queued, false, false),
    (.complete, false, nil),
    (.complete, true, true),
  ])
  func resume(state: DownloadState, fileMissing: Bool, queued: Bool?) {
    let machine = Queue.machine([state])
    let id = Queue.id(1)
    let transition = try? machine.resume([id], missingFiles: fileMissing ? [id] : [])
    #expect((transition != nil) == (queued != nil))
    guard let queued, let transition else { return }
    #expect(transition.actions == (queued ? [.notify(.queued(id))] : []))
    if state == .complete {
      #expect(
        transition.changes == [
          .finish(id, RunResult(state: .queued, bytes: 0, totalBytes: nil, file: "/d/1"))
        ])
    } else {
      #expect(transition.changes == (queued ? [.state(id, .queued, error: nil)] : []))
    }
  }

  /// How a run's end depends on how it ended and on what was asked of it meanwhile.
  @Test(arguments: [
    ("completes", nil as Machine.StopReason?, "completed", DownloadState.complete, "completed"),
    ("fails", nil, "failed", .failed, "failed"),
    ("stops unasked", nil, "stopped", .failed, "failed"),
    ("fails while pausing", .pause, "failed", .paused, "paused"),
    ("completes while pausing", .pause, "completed", .complete, "completed"),
    ("pauses", .pause, "stopped", .paused, "paused"),
    ("is cancelled", .cancel(discard: false), "stopped", .removed, "removed"),
    ("restarts", .restart, "stopped", .queued, "queued"),
    ("shuts down", .shutdown, "stopped", .queued, ""),
  ])
  func runEnds(
    _ name: String, reason: Machine.StopReason?, outcome: String, state: DownloadState, notice: String
  )
    throws
  {
    var machine = Queue.machine([.queued], limit: 1)
    _ = Queue.run(&machine, machine.launch(.resume))
    let id = Queue.id(1)
    switch reason {
    case .pause?: _ = Queue.run(&machine, try machine.pause([id]))
    case .cancel?: _ = Queue.run(&machine, try machine.cancel([id], discard: false))
    case .restart?:
      _ = Queue.run(
        &machine,
        try machine.changeOptions(id, to: Queue.record(1).options, secrets: [], credentialsComplete: true))
    case .shutdown?: _ = machine.close()
    case .remove?, nil: break
    }
    let error = HaulError(.network, "refused")
    let ending: Machine.RunOutcome =
      switch outcome {
      case "completed": .completed(Queue.result(1))
      case "failed": .failed(error)
      default: .stopped
      }
    let transition = machine.runEnded(id, ending, progress: Queue.progress(1), now: 7)
    guard case .finish(id, let result)? = transition.changes.first else {
      Issue.record("\(name): no finish in \(transition)")
      return
    }
    #expect(result.state == state, "\(name)")
    let notices = transition.actions.compactMap { action -> String? in
      guard case .notify(let notice) = action else { return nil }
      return switch notice {
      case .completed: "completed"
      case .failed: "failed"
      case .paused: "paused"
      case .removed: "removed"
      case .queued: "queued"
      default: "other"
      }
    }
    #expect(notices == (notice.isEmpty ? [] : [notice]), "\(name)")
    if state == .complete {
      #expect(result.finalURL == "http://u@h/1", "a final URL is stored without its password")
      #expect(result.sha256 == "ab" && result.bytes == 100 && result.finishedAt == 7)
    }
    _ = machine.apply(transition)
    #expect(machine.runs.isEmpty)
  }

  /// Paused or cancelled, then resumed before the run is over: the stop is announced with the
  /// resume, before `.queued` (the run's end then sees it queued and says nothing of it).
  @Test(arguments: [true, false])
  func aStopResumedBeforeItsRunEndsIsStillAnnounced(cancel: Bool) throws {
    var machine = Queue.machine([.queued], limit: 1)
    _ = Queue.run(&machine, machine.launch(.resume))
    let id = Queue.id(1)
    let stop = cancel ? try machine.cancel([id], discard: false) : try machine.pause([id])
    #expect(
      !stop.actions.contains { if case .notify = $0 { true } else { false } }, "announced at the run's end")
    _ = Queue.run(&machine, stop)
    let resume = try machine.resume([id])
    let notices = resume.actions.compactMap { action -> String? in
      guard case .notify(let notice) = action else { return nil }
      return switch notice {
      case .paused: "paused"
      case .removed: "removed"
      case .queued: "queued"
      default: "other"
      }
    }
    #expect(notices == [cancel ? "removed" : "paused", "queued"])
    _ = Queue.run(&machine, resume)
    let ended = machine.runEnded(id, .stopped, progress: Queue.progress(1), now: 7)
    #expect(!ended.actions.contains { if case .notify(.removed) = $0 { true } else { false } })
    #expect(!ended.actions.contains { if case .notify(.paused) = $0 { true } else { false } })
  }

  @Test func removingARunningDownloadDeletesItsFilesWhenTheRunIsOver() throws {
    var machine = Queue.machine([.queued], limit: 1)
    _ = Queue.run(&machine, machine.launch(.resume))
    let id = Queue.id(1)
    let remove = try machine.remove([id], discard: true)
    #expect(remove.changes == [.delete(id)])
    #expect(remove.actions == [.stop(id, .remove(discard: true)), .notify(.forgotten(id))])
    _ = Queue.run(&machine, remove)
    #expect(machine.records.isEmpty && machine.runs[id] == .stopping(.remove(discard: true)))
    let ended = machine.runEnded(id, .stopped, progress: Queue.progress(1, file: "/d/named"), now: 1)
    #expect(ended.changes.isEmpty)
    #expect(
      ended.actions == [
        .deleteFiles(DownloadFiles(file: "/d/named", directory: nil, url: "http://h/1", finished: false))
      ])
    _ = machine.apply(ended)
    #expect(machine.isIdle && machine.orphans.isEmpty)
  }

  @Test func cancelRemoveAndForget() throws {
    let machine = Queue.machine([.queued, .paused, .complete, .failed])
    let cancel = try machine.cancel([Queue.id(1), Queue.id(2)], discard: true)
    #expect(
      cancel.changes == [
        .state(Queue.id(1), .removed, error: nil), .state(Queue.id(2), .removed, error: nil),
      ])
    #expect(cancel.actions.count { if case .deleteFiles = $0 { true } else { false } } == 2)
    #expect(throws: HaulError.self) { try machine.cancel([Queue.id(3)], discard: false) }
    #expect(throws: HaulError.self) { try machine.forget([Queue.id(1)]) }
    #expect(machine.forgetFinished().changes == [.delete(Queue.id(3)), .delete(Queue.id(4))])
    let remove = try machine.remove([Queue.id(3)], discard: true)
    #expect(
      remove.actions.first
        == .deleteFiles(DownloadFiles(file: "/d/3", directory: nil, url: "http://h/3", finished: true)))
    #expect(try machine.remove([Queue.id(3)], discard: false).actions == [.notify(.forgotten(Queue.id(3)))])
  }

  @Test func closingStopsEveryRunAndStartsNothing() {
    var machine = Queue.machine([.queued, .queued, .queued], limit: 2)
    _ = Queue.run(&machine, machine.launch(.resume))
    #expect(machine.close() == [.stop(Queue.id(1), .shutdown), .stop(Queue.id(2), .shutdown)])
    #expect(!machine.isIdle)
    let first = machine.runEnded(Queue.id(1), .stopped, progress: Queue.progress(1), now: 1)
    #expect(Queue.run(&machine, first).isEmpty, "nothing starts while closing")
    _ = Queue.run(&machine, machine.runEnded(Queue.id(2), .stopped, progress: Queue.progress(2), now: 1))
    #expect(machine.isIdle)
    #expect(machine.records[Queue.id(1)]?.state == .queued, "released for the next launch")
  }

  /// Runs that end while the catalog is busy are committed and applied together: the slots
  /// they free are claimed once, for all of them, after each run's notice.
  @Test func runsEndedTogetherAreClaimedForOnce() {
    var machine = Queue.machine([.queued, .queued, .queued, .queued, .queued], limit: 2)
    _ = Queue.run(&machine, machine.launch(.resume))
    let ends = [1, 2].map { number in
      machine.runEnded(
        Queue.id(number), .completed(Queue.result(number)), progress: Queue.progress(number), now: 1)
    }
    let actions = machine.apply(ends)
    #expect(
      actions == [
        .notify(.completed(Queue.id(1), Queue.result(1))), .notify(.completed(Queue.id(2), Queue.result(2))),
        .claim(2),
      ])
    #expect(machine.runs.isEmpty && machine.records[Queue.id(2)]?.state == .complete)
    #expect(Queue.started(machine.claimed([Queue.record(3), Queue.record(4)])) == [3, 4])
  }

  @Test func aLoweredLimitLetsRunsFinishAndARaisedOneStartsMore() {
    var machine = Queue.machine([.queued, .queued, .queued, .queued], limit: 2)
    _ = Queue.run(&machine, machine.launch(.resume))
    #expect(machine.setLimit(1).isEmpty)
    let ended = machine.runEnded(
      Queue.id(1), .completed(Queue.result(1)), progress: Queue.progress(1), now: 1)
    #expect(Queue.started(Queue.run(&machine, ended)).isEmpty, "one still runs: at the new limit")
    var raised = machine.setLimit(3)
    #expect(raised == [.claim(2)])
    raised += machine.claimed([Queue.record(3), Queue.record(4)])
    #expect(Queue.started(raised) == [3, 4])
  }

  @Test func addingPlacesDownloadsAndRefusesASecondDownloadOfTheSameFile() throws {
    var machine = Queue.machine([.queued, .active, .complete])
    let new = [Queue.record(7, position: 0), Queue.record(8, position: 0)]
    let front = try machine.add(new, at: .front, paused: true)
    _ = machine.apply(front)
    #expect(machine.waiting.map(\.id.rawValue) == [7, 8, 1])
    #expect(machine.records[Queue.id(7)]?.state == .paused)
    #expect(front.actions == [.notify(.added(Queue.id(7))), .notify(.added(Queue.id(8)))])
    // Their places, in one pass, as `waitingIndex(of:)` gives them one by one.
    #expect(machine.waitingIndices() == [Queue.id(7): 0, Queue.id(8): 1, Queue.id(1): 2])
    for id in [7, 8, 1, 2, 3].map(Queue.id) {
      #expect(machine.waitingIndices()[id] == machine.waitingIndex(of: id))
    }

    var same = Queue.record(9)
    same.file = "/d/1"
    #expect(throws: HaulError.self) { try machine.add([same], at: .end, paused: false) }
    same.file = "/d/3"
    #expect(throws: Never.self) { try machine.add([same], at: .end, paused: false) }
    var twice = Queue.record(10)
    twice.destination = .directory(URL(fileURLWithPath: "/d"))
    twice.file = nil
    var again = twice
    again.id = Queue.id(11)
    #expect(throws: HaulError.self) { try machine.add([twice, again], at: .end, paused: false) }
  }

  @Test func addingBetweenNeighboursWithoutRoomRenumbers() throws {
    var machine = ManagerStateMachine(
      records: [
        Queue.record(1, position: 10), Queue.record(2, position: 11),
        Queue.record(3, .complete, position: 12),
      ],
      limit: 1, holding: true)
    let transition = try machine.add([Queue.record(5), Queue.record(6)], at: .index(1), paused: false)
    _ = machine.apply(transition)
    #expect(machine.waiting.map(\.id.rawValue) == [1, 5, 6, 2])
    #expect(machine.order.ids.map(\.rawValue) == [1, 5, 6, 2, 3], "the others keep their order")
    let positions = machine.order.slots.map(\.position)
    #expect(Set(positions).count == positions.count)
  }

  @Test(arguments: [
    // waiting [1, 2, 3, 4]: move, to → order after, returned index
    (4 as UInt64, QueuePosition.index(0), [4, 1, 2, 3] as [UInt64], 0),
    (1, .offset(2), [2, 3, 1, 4], 2),
    (2, .fromEnd(0), [1, 3, 4, 2], 3),
    (4, .fromEnd(-1), [1, 2, 4, 3], 2),
    (1, .index(99), [2, 3, 4, 1], 3),
    (4, .offset(-99), [4, 1, 2, 3], 0),
    (3, .offset(Int.max), [1, 2, 4, 3], 3),
    (2, .index(1), [1, 2, 3, 4], 1),
    (1, .fromEnd(5), [2, 3, 4, 1], 3),
  ])
  func moveIsAria2sChangePosition(id: UInt64, to position: QueuePosition, order: [UInt64], index: Int) throws
  {
    var machine = Queue.machine([.queued, .paused, .queued, .queued, .active], holding: true)
    let (transition, destination) = try machine.move(Queue.id(id), to: position)
    #expect(destination == index)
    _ = machine.apply(transition)
    #expect(machine.waiting.map(\.id.rawValue) == order)
  }

  @Test func onlyWaitingDownloadsMove() {
    let machine = Queue.machine([.queued, .active, .complete], holding: true)
    #expect(throws: HaulError.self) { try machine.move(Queue.id(2), to: .front) }
    #expect(throws: HaulError.self) { try machine.move(Queue.id(3), to: .front) }
    #expect(throws: HaulError.self) { try machine.move(Queue.id(8), to: .front) }
  }

  @Test func startMovesToTheFrontAndResumes() throws {
    var machine = Queue.machine([.queued, .queued, .paused], limit: 1, holding: true)
    _ = machine.apply(try machine.start(Queue.id(3)))
    #expect(machine.waiting.map(\.id.rawValue) == [3, 1, 2])
    #expect(machine.records[Queue.id(3)]?.state == .queued)
  }

  @Test func anOptionChangeRestartsARunningDownload() throws {
    var machine = Queue.machine([.queued], limit: 1)
    _ = Queue.run(&machine, machine.launch(.resume))
    let change = try machine.changeOptions(
      Queue.id(1), to: Queue.record(1).options, secrets: [], credentialsComplete: true)
    #expect(change.actions == [.stop(Queue.id(1), .restart), .notify(.changed(Queue.id(1)))])
    _ = Queue.run(&machine, change)
    let ended = machine.runEnded(Queue.id(1), .stopped, progress: Queue.progress(1), now: 1)
    #expect(Queue.started(Queue.run(&machine, ended)) == [1], "it runs again with the new options")
  }

  /// A change of the rate limit alone, with memory unchanged (`sameInMemory`), reaches the
  /// running download as it goes, as aria2's changeOption does. Anything else with it, or a
  /// change memory cannot vouch for, restarts it; a download that does not run gets neither.
  @Test func aRateLimitChangeAloneReachesTheRunningDownload() throws {
    var machine = Queue.machine([.queued, .queued], limit: 1)
    _ = Queue.run(&machine, machine.launch(.resume))
    let running = Queue.id(1)
    var slower = Queue.record(1).options
    slower.rateLimit = 100_000
    var slowerAndOther = slower
    slowerAndOther.connections = 4
    func actions(_ options: StoredOptions, of id: DownloadID = running, same: Bool = true) throws
      -> [ManagerStateMachine.Action]
    {
      try machine.changeOptions(id, to: options, secrets: [], credentialsComplete: true, sameInMemory: same)
        .actions
    }
    #expect(try actions(slower) == [.setRateLimit(running, 100_000), .notify(.changed(running))])
    #expect(try actions(slower, same: false) == [.stop(running, .restart), .notify(.changed(running))])
    #expect(try actions(slowerAndOther) == [.stop(running, .restart), .notify(.changed(running))])
    #expect(try actions(slower, of: Queue.id(2)) == [.notify(.changed(Queue.id(2)))])
    // Committed, the limit stays with the record for later runs; lifting it reaches the run too.
    _ = Queue.run(
      &machine,
      try machine.changeOptions(
        running, to: slower, secrets: [], credentialsComplete: true, sameInMemory: true))
    #expect(machine.records[running]?.options.rateLimit == 100_000)
    #expect(
      try actions(Queue.record(1).options) == [.setRateLimit(running, nil), .notify(.changed(running))])
  }
}
