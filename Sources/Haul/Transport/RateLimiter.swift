/// A byte budget over time (token bucket) shared by all connections of a download.
/// libcurl's own per-handle limit cannot be shared across connections (and did not hold
/// here once the write callback did real work), so the transport pauses a transfer itself
/// whenever the budget is spent.
final class RateLimiter: Sendable {
  private struct Bucket {
    var tokens: Double
    var last: UInt64
  }

  let bytesPerSecond: Double
  /// Bytes that may arrive in one burst; a tenth of a second's worth, at least 16 KiB.
  let burst: Double
  private let bucket: Locked<Bucket>

  init(bytesPerSecond: Int64, now: UInt64 = Monotonic.now()) {
    self.bytesPerSecond = Double(max(1, bytesPerSecond))
    self.burst = max(16 * 1024, self.bytesPerSecond / 10)
    self.bucket = Locked(Bucket(tokens: burst, last: now))
  }

  /// Nanoseconds to wait before receiving more; 0 when bytes may flow now.
  func delay(now: UInt64) -> UInt64 {
    bucket.withLock { bucket in
      refill(&bucket, now: now)
      return bucket.tokens > 0 ? 0 : UInt64((-bucket.tokens + 1) / bytesPerSecond * 1e9)
    }
  }

  /// Spends `count` bytes; the budget may go negative, which `delay` then works off.
  func consume(_ count: Int, now: UInt64) {
    bucket.withLock { bucket in
      refill(&bucket, now: now)
      bucket.tokens -= Double(count)
    }
  }

  private func refill(_ bucket: inout Bucket, now: UInt64) {
    guard now > bucket.last else { return }
    bucket.tokens = min(burst, bucket.tokens + Double(now - bucket.last) / 1e9 * bytesPerSecond)
    bucket.last = now
  }
}
