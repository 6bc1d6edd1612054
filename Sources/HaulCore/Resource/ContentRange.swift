/// A `Content-Range` response header (RFC 9110 §14.4).
///
/// Haul checks every 206 against the range it asked for, so the parser is strict: anything
/// that is not a well-formed, self-consistent byte range is nil rather than a guess.
///
/// ```swift
/// ContentRange(headerValue: "bytes 0-499/1234")  // .range(first: 0, last: 499, total: 1234)
/// ContentRange(headerValue: "bytes 500-999/*")   // .range(first: 500, last: 999, total: nil)
/// ContentRange(headerValue: "bytes */1234")      // .unsatisfied(total: 1234), sent with 416
/// ```
package enum ContentRange: Sendable, Equatable {
  /// The inclusive byte positions `first...last` of a body of `total` bytes (nil when unknown).
  case range(first: Int64, last: Int64, total: Int64?)
  /// No part of the requested range exists; the representation is `total` bytes long.
  case unsatisfied(total: Int64)

  /// Parses a header value; nil for other units, malformed or inconsistent ranges.
  ///
  /// The unit is case-insensitive and whitespace is tolerated around the value and its
  /// separators. Rejected: `last < first`, `last >= total`, signs, numbers beyond `Int64`,
  /// a `last` of `Int64.max` (its length would not fit), and trailing junk.
  package init?(headerValue: String) {
    var scanner = ByteScanner(headerValue)
    scanner.skipWhitespace()
    guard scanner.consumeCaseInsensitive("bytes") else { return nil }
    // The grammar needs at least one space after the unit ("bytesX" is another unit).
    guard let separator = scanner.peek, separator == 0x20 || separator == 0x09 else { return nil }
    scanner.skipWhitespace()

    if scanner.consume(UInt8(ascii: "*")) {
      scanner.skipWhitespace()
      guard scanner.consume(UInt8(ascii: "/")) else { return nil }
      scanner.skipWhitespace()
      guard let total = scanner.readNumber() else { return nil }
      scanner.skipWhitespace()
      guard scanner.isAtEnd else { return nil }
      self = .unsatisfied(total: total)
      return
    }

    guard let first = scanner.readNumber() else { return nil }
    scanner.skipWhitespace()
    guard scanner.consume(UInt8(ascii: "-")) else { return nil }
    scanner.skipWhitespace()
    guard let last = scanner.readNumber(), last >= first, last < Int64.max else { return nil }
    scanner.skipWhitespace()
    guard scanner.consume(UInt8(ascii: "/")) else { return nil }
    scanner.skipWhitespace()
    var total: Int64?
    if !scanner.consume(UInt8(ascii: "*")) {
      guard let complete = scanner.readNumber(), last < complete else { return nil }
      total = complete
    }
    scanner.skipWhitespace()
    guard scanner.isAtEnd else { return nil }
    self = .range(first: first, last: last, total: total)
  }

  /// The number of bytes in the range; nil for `.unsatisfied` (or a hand-built range that is
  /// empty or too long to count, which the parser never produces).
  package var length: Int64? {
    guard case .range(let first, let last, _) = self, first <= last else { return nil }
    let (difference, overflow1) = last.subtractingReportingOverflow(first)
    let (count, overflow2) = difference.addingReportingOverflow(1)
    return overflow1 || overflow2 ? nil : count
  }

  /// The complete length when the server said it.
  package var total: Int64? {
    switch self {
    case .range(_, _, let total): total
    case .unsatisfied(let total): total
    }
  }
}
