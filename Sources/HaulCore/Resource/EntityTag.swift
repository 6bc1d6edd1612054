/// An entity tag from an `ETag` header (RFC 9110 §8.8.3).
///
/// Haul stores the tag of a partial download and sends it back in `If-Range` when resuming,
/// so it must round-trip exactly and compare with the strong function (weak tags cannot
/// prove that the bytes on disk are still the bytes on the server).
package struct EntityTag: Sendable, Equatable, Hashable {
  /// The characters between the quotes, without the quotes.
  package let opaque: String
  /// True for `W/"..."`: the server only promises semantic equivalence.
  package let isWeak: Bool

  /// Makes a tag from its parts; nil when `opaque` has characters a tag cannot hold
  /// (a quote, a space, a control character), so `headerValue` is always well-formed.
  package init?(opaque: String, isWeak: Bool = false) {
    guard opaque.utf8.allSatisfy(Self.isTagCharacter) else { return nil }
    self.opaque = opaque
    self.isWeak = isWeak
  }

  /// Parses `"abc"` or `W/"abc"`, allowing whitespace around it; nil for anything else.
  ///
  /// The weakness prefix is accepted in either case (`w/` is a common server slip); treating
  /// such a tag as weak is the safe reading.
  package init?(headerValue: String) {
    var scanner = ByteScanner(headerValue)
    scanner.skipWhitespace()
    var weak = false
    if scanner.consumeCaseInsensitive("W/") { weak = true }
    guard scanner.consume(UInt8(ascii: "\"")) else { return nil }
    let start = scanner.index
    var end = start
    while let byte = scanner.peek, Self.isTagCharacter(byte) {
      _ = scanner.consume(byte)
      end = scanner.index
    }
    guard scanner.consume(UInt8(ascii: "\"")) else { return nil }
    scanner.skipWhitespace()
    guard scanner.isAtEnd else { return nil }
    // The slice starts and ends at ASCII quotes, so it is whole UTF-8.
    self.opaque = String(decoding: scanner.bytes[start..<end], as: UTF8.self)
    self.isWeak = weak
  }

  /// The tag as it appears in `ETag`, `If-Range` and `If-Match`.
  package var headerValue: String { (isWeak ? "W/\"" : "\"") + opaque + "\"" }

  /// Strong comparison (RFC 9110 §8.8.3.2): both tags strong and byte-for-byte equal (not
  /// Unicode-equivalent: the server compares octets).
  /// This is the only comparison that may justify appending to a partial file.
  package func strongMatch(_ other: EntityTag) -> Bool {
    !isWeak && !other.isWeak && opaque.utf8.elementsEqual(other.opaque.utf8)
  }

  /// Weak comparison (RFC 9110 §8.8.3.2): the opaque parts are equal, weakness ignored.
  package func weakMatch(_ other: EntityTag) -> Bool {
    opaque.utf8.elementsEqual(other.opaque.utf8)
  }

  /// Equality is byte-wise, like the comparisons, so equal tags always match each other.
  package static func == (lhs: EntityTag, rhs: EntityTag) -> Bool {
    lhs.isWeak == rhs.isWeak && lhs.opaque.utf8.elementsEqual(rhs.opaque.utf8)
  }

  package func hash(into hasher: inout Hasher) {
    hasher.combine(isWeak)
    for byte in opaque.utf8 { hasher.combine(byte) }
  }

  /// etagc = %x21 / %x23-7E / obs-text: visible ASCII except the quote, or any non-ASCII byte.
  private static func isTagCharacter(_ byte: UInt8) -> Bool {
    byte == 0x21 || (byte >= 0x23 && byte != 0x7F)
  }
}
