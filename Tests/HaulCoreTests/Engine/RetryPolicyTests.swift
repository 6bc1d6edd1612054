import Testing

@testable import HaulCore

@Suite struct RetryPolicyTests {
  let policy = RetryPolicy(baseDelay: 1, maxDelay: 30, maxAttemptsWithoutProgress: 4)

  @Test func backoffDoublesWithinJitterBoundsAndCaps() {
    for failures in 1...10 {
      let ceiling = min(30, Double(1 << (failures - 1)))
      #expect(policy.delay(afterFailures: failures, retryAfter: nil, jitter: 0) == ceiling / 2)
      #expect(policy.delay(afterFailures: failures, retryAfter: nil, jitter: 1) == ceiling)
    }
  }

  @Test func retryAfterWinsAndIsCapped() {
    #expect(policy.delay(afterFailures: 3, retryAfter: 7, jitter: 0.5) == 7)
    #expect(policy.delay(afterFailures: 3, retryAfter: -5, jitter: 0.5) == 0)
    #expect(policy.delay(afterFailures: 3, retryAfter: 1e9, jitter: 0.5) == 3600)
  }

  @Test func budgetCountsAttemptsWithoutProgress() {
    #expect(policy.allowsAnotherAttempt(afterFailures: 3))
    #expect(!policy.allowsAnotherAttempt(afterFailures: 4))
  }

  @Test func hugeFailureCountsDoNotOverflow() {
    #expect(policy.delay(afterFailures: Int.max, retryAfter: nil, jitter: 1) == 30)
  }
}
