/// A `Retry-After` header (RFC 9110 §10.2.3), sent with 503, 429 and some 3xx responses.
///
/// Haul honours it between retries, so a hostile or broken value must never turn into a
/// negative or overflowing sleep: garbage is nil and `delay(now:)` is clamped.
package enum RetryAfter: Sendable, Equatable {
  /// Wait this many seconds (`Retry-After: 120`).
  case seconds(Int64)
  /// Wait until this Unix time (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`).
  case date(Int64)

  /// Parses delay-seconds (digits only, no sign, must fit `Int64`) or an HTTP-date.
  package init?(headerValue: String) {
    var scanner = ByteScanner(headerValue)
    scanner.skipWhitespace()
    if let first = scanner.peek, ByteScanner.isDigit(first) {
      guard let seconds = scanner.readNumber() else { return nil }
      scanner.skipWhitespace()
      guard scanner.isAtEnd else { return nil }
      self = .seconds(seconds)
    } else if let unixTime = HTTPDate.parse(headerValue) {
      self = .date(unixTime)
    } else {
      return nil
    }
  }

  /// Seconds to wait from `now` (Unix time); never negative, saturating instead of overflowing.
  package func delay(now: Int64) -> Int64 {
    switch self {
    case .seconds(let seconds):
      return max(0, seconds)
    case .date(let unixTime):
      let (difference, overflow) = unixTime.subtractingReportingOverflow(now)
      if overflow { return unixTime > now ? Int64.max : 0 }
      return max(0, difference)
    }
  }
}
