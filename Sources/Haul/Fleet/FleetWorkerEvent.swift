import FoundationEssentials

/// Something a `FleetWorker` did, in order. Observe them with `FleetWorker.events`.
public enum FleetWorkerEvent: Sendable {
  /// A job was claimed: its id, URL (without password), granted connections, bytes earlier holders recorded.
  case claimed(id: String, url: String, connections: Int, recordedBytes: Int64)
  /// Its download accepted a response (`resumedFrom` > 0: it continued a `.part` it found).
  case started(id: String, DownloadStart)
  case progress(id: String, DownloadProgress)
  /// Done, and recorded in the queue.
  case completed(id: String, DownloadResult)
  /// Failed for good, and recorded in the queue.
  case failed(id: String, HaulError)
  /// Given back to the queue (drained, paused or removed from elsewhere, or to retry later).
  case released(id: String, state: FleetJob.State, reason: HaulError?)
  /// The lease was gone before the job ended: the download was stopped and the job left to its
  /// new holder. `stillHadFile` is true when the download had finished just before.
  case leaseLost(id: String, finished: Bool)
  /// The queue could not be reached or refused a statement; the worker keeps trying. Reported
  /// when it starts, when the error changes, and every minute while it lasts.
  case queueError(HaulError)
  /// The queue answered again after a `queueError`.
  case queueReachable
}

/// What a worker's `run()` did.
public struct FleetWorkerSummary: Sendable, Equatable {
  public var completed = 0
  public var failed = 0
  public var released = 0
  public var leasesLost = 0

  public init(completed: Int = 0, failed: Int = 0, released: Int = 0, leasesLost: Int = 0) {
    self.completed = completed
    self.failed = failed
    self.released = released
    self.leasesLost = leasesLost
  }
}

/// Turns a worker's failed and successful statements into `.queueError` and `.queueReachable`
/// events an operator can read: while the database is away every job's renewal fails twice a
/// second, so an error is reported when the queue becomes unreachable, when an error not yet
/// seen in this outage comes, and at most every `reminderInterval` while it lasts; the first
/// success after it is reported.
final class FleetQueueHealth: Sendable {
  static let reminderInterval = 60.0

  private struct State {
    var failing = false
    /// The messages reported in this outage (a handful at most: the connection lost, refused…).
    var seen: Set<String> = []
    var lastReportAt = -Double.infinity
  }
  private let state = Locked(State())
  private let emit: @Sendable (FleetWorkerEvent) -> Void

  init(emit: @escaping @Sendable (FleetWorkerEvent) -> Void) { self.emit = emit }

  func failed(_ error: HaulError, now: Double = LeaseClock.seconds()) {
    let report = state.withLock { state in
      let new = !state.failing || (state.seen.count < 16 && !state.seen.contains(error.message))
      let due = new || now - state.lastReportAt >= Self.reminderInterval
      state.failing = true
      if due {
        state.seen.insert(error.message)
        state.lastReportAt = now
      }
      return due
    }
    if report { emit(.queueError(error)) }
  }

  func succeeded() {
    let recovered = state.withLock { state in
      defer {
        state.failing = false
        state.seen = []
      }
      return state.failing
    }
    if recovered { emit(.queueReachable) }
  }
}
