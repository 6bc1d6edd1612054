#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// When a held job's lease must be renewed, and until when this worker may still write.
///
/// The database decides expiry with its own clock (`lease_expires_at = now() + lease`); a worker
/// cannot see that clock, so it reasons from its own monotonic one: a renewal *sent* at `t` set
/// an expiry no earlier than `t + lease` (the server stamped it after receiving it). The worker
/// treats its right to write as ending at `t + lease × writeFraction`, well before that, and
/// stops its download there if no later renewal got through (the database unreachable, the
/// process stalled). The rest of the lease covers the time a download takes to stop writing
/// and any drift between the clocks' rates; only then can another worker claim the job.
struct LeaseTimer: Equatable {
  /// Seconds the database grants per renewal.
  let lease: Double
  /// Minimum seconds between progress writes (each one renews the lease too).
  let progressInterval: Double
  /// Part of the lease during which writing is allowed after a renewal was sent.
  static let writeFraction = 0.75

  /// Local monotonic time until which the download may write.
  private(set) var writableUntil: Double
  /// When the last renewal that succeeded was sent, and when the last one (any outcome) was sent.
  private(set) var lastRenewedSentAt: Double
  private(set) var lastSentAt: Double

  /// `claimSentAt`: when the claim statement was sent (the lease runs from no earlier than that).
  init(lease: Double, progressInterval: Double, claimSentAt: Double) {
    self.lease = lease
    self.progressInterval = progressInterval
    writableUntil = claimSentAt + lease * Self.writeFraction
    lastRenewedSentAt = claimSentAt
    lastSentAt = claimSentAt
  }

  /// Without progress, a renewal a quarter lease after the last good one: three more chances
  /// before writing must stop.
  var keepAliveInterval: Double { lease / 4 }

  /// Whether to send a renewal now: new progress at most every `progressInterval`, and a
  /// keep-alive every quarter lease with or without progress.
  func renewalDue(now: Double, progressChanged: Bool) -> Bool {
    let sinceSent = now - lastSentAt
    if progressChanged, sinceSent >= progressInterval { return true }
    return now - lastRenewedSentAt >= keepAliveInterval
      && sinceSent >= min(progressInterval, keepAliveInterval)
  }

  mutating func sent(at time: Double) { lastSentAt = max(lastSentAt, time) }

  /// A renewal sent at `sentAt` succeeded.
  mutating func renewed(sentAt: Double) {
    lastRenewedSentAt = max(lastRenewedSentAt, sentAt)
    writableUntil = max(writableUntil, sentAt + lease * Self.writeFraction)
  }

  /// True once writing must stop: no renewal got through in time.
  func mustStopWriting(now: Double) -> Bool { now >= writableUntil }
}

/// What a worker does with a job once its download ended; pure, so every case is table-tested.
enum FleetDisposition: Equatable {
  /// Record the result (one transaction, matching the lease token).
  case complete
  /// Fail the job for good with this error.
  case fail(HaulError)
  /// Give the job back: queued again at once or after `delay` seconds.
  case release(delay: Double, countsAsAttempt: Bool, reason: HaulError?)
  /// Touch nothing: the lease is not ours any more.
  case abandon

  /// Why the worker itself stopped a download (nil: it ended by itself).
  enum Stop: Equatable {
    case drain
    case pauseRequested
    case removeRequested
    /// The renewal said the lease is gone, or it ran out before a renewal got through.
    case leaseLost
  }

  /// Seconds to wait before another attempt after `attempts` claims that ended in a transient failure.
  static func backoff(attempts: Int, jitter: Double) -> Double {
    let base = 15 * Double(1 << min(max(attempts - 1, 0), 6))
    return min(900, base) * (0.8 + 0.4 * min(max(jitter, 0), 1))
  }

  /// The decision. `attempts` counts claims of the job so far, this one included.
  static func decide(
    outcome: Result<DownloadResult, HaulError>, stop: Stop?, attempts: Int, maxAttempts: Int, jitter: Double
  ) -> FleetDisposition {
    if stop == .leaseLost { return .abandon }
    switch outcome {
    case .success:
      return .complete
    case .failure(let error) where error.category == .interrupted:
      switch stop {
      case .drain, .pauseRequested, .removeRequested, nil:
        // Stopped on purpose (a pending pause or remove is carried out by the release itself),
        // or interrupted by something else: the job goes back, and this claim does not count.
        return .release(delay: 0, countsAsAttempt: false, reason: nil)
      case .leaseLost:
        return .abandon
      }
    case .failure(let error) where isBusy(error):
      // Another process still holds the .part: most likely a worker that lost this lease and
      // has not noticed yet. It stops within its lease; try again a little later.
      return .release(delay: 5, countsAsAttempt: false, reason: error)
    case .failure(let error) where isTransient(error):
      guard attempts < maxAttempts else { return .fail(error) }
      return .release(
        delay: backoff(attempts: attempts, jitter: jitter), countsAsAttempt: true, reason: error)
    case .failure(let error):
      return .fail(error)
    }
  }

  /// Failures that another attempt (on this host or another) may not meet: the network, after
  /// the engine's own retries, a full disk (another worker may have room), and a job directory
  /// this worker cannot make under its base (another worker's base may be fine).
  static func isTransient(_ error: HaulError) -> Bool {
    if error.category == .network || error.underlying is FleetHostDirectoryUnusable { return true }
    guard error.category == .fileSystem, let cause = error.underlying as? SystemError else { return false }
    return SystemError.meansNoSpace(cause.errno)
  }

  /// Another download, of this worker or another process, holds the target (its .part is locked).
  static func isBusy(_ error: HaulError) -> Bool {
    error.underlying is TargetInUse
  }
}

/// The worker could not make a job's directory under its base directory: its host's problem.
struct FleetHostDirectoryUnusable: Error, Sendable {
  let cause: HaulError
}
