import Testing

@testable import HaulCore

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

  @Test func noRateMeansNoWaitAndNoDebt() {
    let limiter = RateLimiter(bytesPerSecond: nil, now: 0)
    limiter.consume(10_000_000, now: 0)
    #expect(limiter.delay(now: 0) == 0)
  }

  @Test func changingTheRateKeepsTheDebtAndUsesTheNewRate() {
    let limiter = RateLimiter(bytesPerSecond: 1_000_000, now: 0)
    limiter.consume(1_100_000, now: 0)  // 1 MB of debt
    limiter.setBytesPerSecond(2_000_000, now: 0)
    let wait = limiter.delay(now: 0)
    #expect(wait > 490_000_000 && wait < 510_000_000)
    limiter.setBytesPerSecond(nil, now: 0)
    #expect(limiter.delay(now: 0) == 0)
    // Back to a limit: the burst is capped to the new rate's.
    limiter.setBytesPerSecond(100_000, now: 0)
    #expect(limiter.burst == 16 * 1024)
  }

  @Test func bandwidthLimitIsAdjustable() {
    let limit = BandwidthLimit(bytesPerSecond: 4 << 20)
    #expect(limit.bytesPerSecond == 4 << 20)
    limit.bytesPerSecond = nil
    #expect(limit.bytesPerSecond == nil)
    #expect(limit.limiter.delay(now: Monotonic.now()) == 0)
  }
  /// A transfer under a limit reads at most a burst at a time (16 KiB at least), so that one
  /// chunk's debt is a tenth of a second, not seconds every other transfer waits out.
  @Test func receiveBufferIsABurstOfTheStrictestLimit() {
    let none = RateLimiter(bytesPerSecond: nil, now: 0)
    let fast = RateLimiter(bytesPerSecond: 8_000_000, now: 0)
    let slow = RateLimiter(bytesPerSecond: 1_000_000, now: 0)
    let crawl = RateLimiter(bytesPerSecond: 1_000, now: 0)
    #expect(RateLimiter.receiveBufferSize(1 << 20, under: []) == 1 << 20)
    #expect(RateLimiter.receiveBufferSize(1 << 20, under: [none]) == 1 << 20)
    #expect(RateLimiter.receiveBufferSize(1 << 20, under: [fast, slow]) == 100_000)
    #expect(RateLimiter.receiveBufferSize(1 << 20, under: [crawl]) == 16 * 1024)
    #expect(RateLimiter.receiveBufferSize(256 << 10, under: [fast]) == 256 << 10)
  }

  /// How long a burst takes to fill: the most a paused transfer may oversleep for nothing lost.
  @Test func burstTime() {
    #expect(RateLimiter(bytesPerSecond: nil, now: 0).burstNanoseconds == 0)
    #expect(RateLimiter(bytesPerSecond: 1_000_000, now: 0).burstNanoseconds == 100_000_000)
    #expect(RateLimiter(bytesPerSecond: 16 * 1024, now: 0).burstNanoseconds == 1_000_000_000)
  }
}
