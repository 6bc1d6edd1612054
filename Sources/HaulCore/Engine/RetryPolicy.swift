/// When to try again after a transient failure: exponential backoff with jitter, a server's
/// Retry-After taking precedence, and a budget of attempts that resets whenever one makes progress.
package struct RetryPolicy: Sendable, Equatable {
  package var baseDelay: Double
  package var maxDelay: Double
  package var maxAttemptsWithoutProgress: Int
  /// Longest Retry-After honoured; a server asking for more is waited on this long, then tried.
  package var retryAfterCap: Double = 3600

  package init(
    baseDelay: Double, maxDelay: Double, maxAttemptsWithoutProgress: Int, retryAfterCap: Double = 3600
  ) {
    self.baseDelay = baseDelay
    self.maxDelay = maxDelay
    self.maxAttemptsWithoutProgress = maxAttemptsWithoutProgress
    self.retryAfterCap = retryAfterCap
  }

  /// Seconds to wait before attempt `failures + 1`, where `failures` counts failed attempts in a row
  /// without progress (1 after the first). `jitter` in 0...1 spreads clients apart ("equal jitter").
  package func delay(afterFailures failures: Int, retryAfter: Double?, jitter: Double) -> Double {
    if let retryAfter { return min(max(0, retryAfter), retryAfterCap) }
    let exponent = Double(min(max(failures - 1, 0), 30))
    let ceiling = min(maxDelay, baseDelay * pow2(exponent))
    let spread = min(max(jitter, 0), 1)
    return ceiling / 2 + ceiling / 2 * spread
  }

  /// Whether another attempt is allowed after `failures` failed attempts in a row without progress.
  package func allowsAnotherAttempt(afterFailures failures: Int) -> Bool {
    failures < maxAttemptsWithoutProgress
  }

  private func pow2(_ exponent: Double) -> Double {
    var value = 1.0
    for _ in 0..<Int(exponent) { value *= 2 }
    return value
  }
}
