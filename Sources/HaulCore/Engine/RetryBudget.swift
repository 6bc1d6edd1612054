/// How much more trying a download gets: attempts without progress, restarts from byte 0,
/// and the short leash for a server that was never reached. Pure; the machine keeps one per run.
///
/// Progress means the bytes held grew past the most ever held in this run; a restart from
/// byte 0 never counts as progress, and restarts are capped on their own. So a server that
/// cuts every response short, or alternates whole and partial responses, runs out of budget.
package struct RetryBudget: Sendable, Equatable {
  package let policy: RetryPolicy
  /// Restarts from byte 0 allowed in one run.
  package let maxRestarts: Int
  /// Failed rounds in a row without progress.
  package private(set) var failures = 0
  package private(set) var restarts = 0
  /// The most bytes ever held in this run.
  package private(set) var mostHeld: Int64
  /// Whether any server answered in this run (a response head arrived).
  package var contacted = false
  /// The last transient failure, for the message when restarts run out.
  package private(set) var lastFailure: HaulError?

  /// Before any server answered, a refused connection gets this many attempts in all, at most
  /// `unreachedDelayCap` seconds apart: a few seconds, as waiting longer rarely helps.
  package static let unreachedAttempts = 3
  package static let unreachedDelayCap = 1.0

  package init(policy: RetryPolicy, maxRestarts: Int = 5, held: Int64) {
    self.policy = policy
    self.maxRestarts = maxRestarts
    self.mostHeld = held
  }

  package enum Decision: Sendable, Equatable {
    case retry(RetryNotice)
    case giveUp(HaulError)
  }

  /// A round failed with `error` (transient) while `held` bytes are held. `unreached`: every
  /// transfer of the round failed to connect. `jitter` in 0...1 spreads the delay.
  /// `cannotResume`: why a next run could not continue the bytes held
  /// (`DownloadMachine.resumeObstacle`); the message never promises a resume then.
  package mutating func roundFailed(
    _ error: HaulError, retryAfter: Double?, held: Int64, unreached: Bool, jitter: Double,
    cannotResume: String? = nil
  ) -> Decision {
    if held > mostHeld {
      mostHeld = held
      failures = 0
    }
    failures += 1
    lastFailure = error
    let shortLeash = unreached && !contacted
    let limit = shortLeash ? min(Self.unreachedAttempts, attemptLimit) : attemptLimit
    guard failures < limit else { return .giveUp(gaveUp(error, held: held, cannotResume: cannotResume)) }
    var delay = policy.delay(afterFailures: failures, retryAfter: retryAfter, jitter: jitter)
    if shortLeash { delay = min(delay, Self.unreachedDelayCap) }
    return .retry(RetryNotice(attempt: failures, maxAttempts: limit, delay: delay, reason: error))
  }

  /// The data starts over from byte 0 because of `reason`; returns the error that ends the
  /// download when that was one restart too many.
  package mutating func restarted(_ reason: String) -> HaulError? {
    restarts += 1
    guard restarts > maxRestarts else { return nil }
    var message = "gave up after \(maxRestarts) restarts from byte 0: \(reason)"
    if let lastFailure { message += "; each attempt ended early (last: \(lastFailure.message))" }
    if mostHeld > 0 { message += "; never more than \(ByteQuantity.format(mostHeld)) held" }
    // A server that cuts every response is a network failure; one that contradicts itself, a protocol one.
    return HaulError(
      lastFailure?.category ?? .protocol, message,
      hint: "the server may not support resuming, or not reliably; try again later")
  }

  /// Attempts allowed without progress: `maxAttemptsWithoutProgress`, where 0 means a single
  /// attempt (no retries) and `Int.max` no limit.
  private var attemptLimit: Int { max(1, policy.maxAttemptsWithoutProgress) }

  private func gaveUp(_ error: HaulError, held: Int64, cannotResume: String?) -> HaulError {
    var detail = "gave up after \(failures == 1 ? "1 attempt" : "\(failures) attempts") without progress"
    if restarts > 0 {
      detail +=
        "; the server started over from byte 0 \(restarts == 1 ? "once" : "\(restarts) times")"
        + " and never sent more than \(ByteQuantity.format(mostHeld))"
    }
    let later = LibraryWording.tryAgainLater
    let hint =
      held == 0
      ? later
      : cannotResume.map { later + "; \($0), so it starts over" }
        ?? later + ": it resumes from \(ByteQuantity.format(held))"
    return HaulError(error.category, "\(error.message) (\(detail))", hint: hint, underlying: error)
  }
}

/// A small, seedable source of jitter (SplitMix64), so the machine stays deterministic in tests.
package struct SeededRandom: RandomNumberGenerator, Sendable, Equatable {
  private var state: UInt64

  package init(seed: UInt64) { state = seed }

  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in 0...1.
  package mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// Receive speed over the last few seconds.
package struct SpeedMeter: Sendable, Equatable {
  private var samples: [Sample] = []
  package private(set) var bytesPerSecond: Double = 0

  private struct Sample: Sendable, Equatable {
    var time: UInt64
    var bytes: Int64
  }

  package init() {}

  package mutating func record(bytes: Int64, at time: UInt64) {
    samples.append(Sample(time: time, bytes: bytes))
    let window: UInt64 = 3_000_000_000
    while let first = samples.first, time &- first.time > window, samples.count > 2 { samples.removeFirst() }
    guard let first = samples.first, time > first.time else { return }
    bytesPerSecond = Double(bytes - first.bytes) / (Double(time - first.time) / 1e9)
  }
}
