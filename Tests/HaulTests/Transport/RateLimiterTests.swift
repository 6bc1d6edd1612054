import Testing

@testable import Haul

@Suite struct RateLimiterTests {
  @Test func spendsBurstThenWaitsInProportion() {
    let start: UInt64 = 1_000_000_000
    let limiter = RateLimiter(bytesPerSecond: 1_000_000, now: start)
    #expect(limiter.burst == 100_000)
    #expect(limiter.delay(now: start) == 0)
    limiter.consume(600_000, now: start)
    // 500 kB of debt at 1 MB/s: about half a second.
    let wait = limiter.delay(now: start)
    #expect(wait > 490_000_000 && wait < 510_000_000)
    #expect(limiter.delay(now: start + wait) == 0)
  }

  @Test func refillNeverExceedsTheBurst() {
    let limiter = RateLimiter(bytesPerSecond: 1_000_000, now: 0)
    limiter.consume(200_000, now: 3_600_000_000_000)
    #expect(limiter.delay(now: 3_600_000_000_000) > 0)
  }
}
