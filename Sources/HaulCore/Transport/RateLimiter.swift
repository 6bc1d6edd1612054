/// A byte budget over time (token bucket) shared by all connections of a download, or by
/// many downloads (`BandwidthLimit`). libcurl's own per-handle limit cannot be shared across
/// connections (and did not hold here once the write callback did real work), so the
/// transport pauses a transfer itself whenever the budget is spent.
package final class RateLimiter: Sendable {
  private struct Bucket {
    /// nil: no limit (bytes flow, nothing is counted).
    package var bytesPerSecond: Double?
    package var tokens: Double
    package var last: UInt64

    /// Bytes that may arrive in one burst; a tenth of a second's worth, at least 16 KiB.
    package var burst: Double { max(16 * 1024, (bytesPerSecond ?? 0) / 10) }
  }

  private let bucket: Locked<Bucket>

  package init(bytesPerSecond: Int64?, now: UInt64 = Monotonic.now()) {
    var bucket = Bucket(bytesPerSecond: bytesPerSecond.map { Double(max(1, $0)) }, tokens: 0, last: now)
    bucket.tokens = bucket.burst
    self.bucket = Locked(bucket)
  }

  package var bytesPerSecond: Double? { bucket.withLock { $0.bytesPerSecond } }
  package var burst: Double { bucket.withLock { $0.burst } }

  /// How long the budget takes to fill a burst, in nanoseconds (0 without a limit): a transfer
  /// may wake that much after its `delay` without the limit losing a byte, since the unspent
  /// budget is kept up to a burst. Transfers paused by one limit wake at one instant, and the
  /// first the event loop looks at would win every round (the others starved for seconds);
  /// a random part of this spreads them, so each round's winner is drawn.
  package var burstNanoseconds: UInt64 {
    bucket.withLock { bucket in bucket.bytesPerSecond.map { UInt64(bucket.burst / $0 * 1e9) } ?? 0 }
  }

  /// The receive buffer for a transfer under these limits: no larger than a burst of the
  /// strictest (16 KiB at least), so that one chunk, which libcurl hands over whole, runs up a
  /// debt of a burst and not of seconds that every other transfer would wait out.
  package static func receiveBufferSize(_ planned: Int, under limiters: [RateLimiter]) -> Int {
    let bursts = limiters.compactMap { $0.bytesPerSecond == nil ? nil : Int($0.burst) }
    guard let smallest = bursts.min() else { return planned }
    return min(planned, max(16 * 1024, smallest))
  }

  /// The longest wait any of `limiters` asks for now, and the one asking; nil when all let
  /// bytes through. Called for every chunk received: no allocation.
  package static func longestDelay(_ limiters: [RateLimiter], now: UInt64) -> (UInt64, RateLimiter)? {
    var longest: (UInt64, RateLimiter)?
    for limiter in limiters {
      let wait = limiter.delay(now: now)
      if wait > (longest?.0 ?? 0) { longest = (wait, limiter) }
    }
    return longest
  }

  /// The strictest of `limiters` as they are now, bytes per second; nil when none limits.
  package static func strictest(_ limiters: [RateLimiter]) -> Double? {
    limiters.compactMap(\.bytesPerSecond).min()
  }

  /// Changes the rate from now on (nil lifts the limit); a debt already run up is kept, so
  /// lowering the rate cannot be dodged by bytes that just arrived.
  package func setBytesPerSecond(_ rate: Int64?, now: UInt64 = Monotonic.now()) {
    bucket.withLock { bucket in
      refill(&bucket, now: now)
      bucket.bytesPerSecond = rate.map { Double(max(1, $0)) }
      bucket.tokens = min(bucket.tokens, bucket.burst)
    }
  }

  /// Nanoseconds to wait before receiving more; 0 when bytes may flow now.
  package func delay(now: UInt64) -> UInt64 {
    bucket.withLock { bucket in
      refill(&bucket, now: now)
      guard let rate = bucket.bytesPerSecond, bucket.tokens <= 0 else { return 0 }
      return UInt64((-bucket.tokens + 1) / rate * 1e9)
    }
  }

  /// Spends `count` bytes; the budget may go negative, which `delay` then works off.
  package func consume(_ count: Int, now: UInt64) {
    bucket.withLock { bucket in
      guard bucket.bytesPerSecond != nil else { return }
      refill(&bucket, now: now)
      bucket.tokens -= Double(count)
    }
  }

  private func refill(_ bucket: inout Bucket, now: UInt64) {
    guard now > bucket.last else { return }
    if let rate = bucket.bytesPerSecond {
      bucket.tokens = min(bucket.burst, bucket.tokens + Double(now - bucket.last) / 1e9 * rate)
    }
    bucket.last = now
  }
}

/// A cap on received bytes per second shared by any number of downloads, changeable while
/// they run: what a download manager's "overall limit" is.
///
/// ```swift
/// let overall = BandwidthLimit(bytesPerSecond: 4 << 20)   // 4 MiB/s over all downloads
/// var options = DownloadOptions()
/// options.sharedRateLimit = overall
/// // … later, from any thread:
/// overall.bytesPerSecond = nil                            // no limit
/// ```
///
/// A download's own `DownloadOptions.rateLimit` applies as well; the stricter one wins.
public final class BandwidthLimit: Sendable {
  package let limiter: RateLimiter

  /// - Parameter bytesPerSecond: the cap, or nil for none (yet).
  public init(bytesPerSecond: Int64?) {
    limiter = RateLimiter(bytesPerSecond: bytesPerSecond.map { max(1, $0) })
  }

  /// The cap in bytes per second, or nil for none. Setting it takes effect at once for every
  /// download sharing this limit; raised or lifted, it lets automatic mode add connections
  /// within half a second.
  public var bytesPerSecond: Int64? {
    get { limiter.bytesPerSecond.map { Int64($0) } }
    set { limiter.setBytesPerSecond(newValue) }
  }
}
