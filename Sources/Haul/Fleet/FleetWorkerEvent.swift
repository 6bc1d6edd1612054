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
  /// The queue could not be reached or refused a statement; the worker keeps trying.
  case queueError(HaulError)
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
