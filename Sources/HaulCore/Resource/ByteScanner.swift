/// A cursor over the UTF-8 bytes of a header value or option.
///
/// Shared by the hand-written parsers so each one reads like its grammar and none of them
/// can index out of bounds: every read checks `isAtEnd` and every number checks for overflow.
package struct ByteScanner: Sendable, Equatable {
  package let bytes: [UInt8]
  package private(set) var index: Int

  package init(_ text: String) {
    bytes = Array(text.utf8)
    index = 0
  }

  package init(bytes: [UInt8]) {
    self.bytes = bytes
    index = 0
  }

  package var isAtEnd: Bool { index >= bytes.count }

  package var peek: UInt8? { isAtEnd ? nil : bytes[index] }

  /// Skips optional whitespace (RFC 9110 OWS: space and horizontal tab).
  package mutating func skipWhitespace() {
    while let byte = peek, byte == 0x20 || byte == 0x09 { index += 1 }
  }

  /// Consumes `byte` if it is next.
  package mutating func consume(_ byte: UInt8) -> Bool {
    guard peek == byte else { return false }
    index += 1
    return true
  }

  /// Consumes an ASCII literal, comparing letters case-insensitively.
  package mutating func consumeCaseInsensitive(_ literal: StaticString) -> Bool {
    let count = literal.utf8CodeUnitCount
    guard bytes.count - index >= count else { return false }
    let matched = literal.withUTF8Buffer { expected in
      for offset in 0..<count {
        if Self.lowercased(bytes[index + offset]) != Self.lowercased(expected[offset]) { return false }
      }
      return true
    }
    if matched { index += count }
    return matched
  }

  /// Reads a run of ASCII letters (possibly empty).
  package mutating func readLetters() -> ArraySlice<UInt8> {
    let start = index
    while let byte = peek, Self.isLetter(byte) { index += 1 }
    return bytes[start..<index]
  }

  /// Reads `minDigits...maxDigits` decimal digits as a non-negative number.
  ///
  /// Returns nil when there are too few digits or the value does not fit in `Int64`, so
  /// callers never see a wrapped or trapped result from hostile input.
  package mutating func readNumber(minDigits: Int = 1, maxDigits: Int = .max) -> Int64? {
    var value: Int64 = 0
    var digits = 0
    while digits < maxDigits, let byte = peek, Self.isDigit(byte) {
      let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte &- 0x30))
      if overflow1 || overflow2 { return nil }
      value = sum
      digits += 1
      index += 1
    }
    return digits >= minDigits ? value : nil
  }

  package static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

  package static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

  package static func lowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

  /// The value of an ASCII hex digit, or nil.
  package static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
  }
}
