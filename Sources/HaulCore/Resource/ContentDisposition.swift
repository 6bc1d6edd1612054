/// Reads the file name a server suggests in `Content-Disposition` (RFC 6266).
///
/// The result is the server's raw, decoded name: it may contain slashes, dots or control
/// characters, so it must go through `FileNameSanitizer` before it touches the disk.
package enum ContentDisposition {
  /// The suggested file name, or nil when there is none.
  ///
  /// `filename*` (RFC 8187: `UTF-8''na%C3%AFve%20file.txt`, charset UTF-8 or ISO-8859-1 in any
  /// case, language tag ignored) wins over `filename`; when it has bad percent-encoding, an
  /// unknown charset or bytes that are not valid in its charset, `filename` is used instead.
  /// `filename` may be a quoted-string (backslash escapes removed) or a bare value, which is
  /// read leniently up to the next `;` because servers often send unquoted names with spaces.
  /// The first occurrence of each parameter counts; malformed parameters are skipped. Empty
  /// names count as absent.
  package static func filename(fromHeaderValue headerValue: String) -> String? {
    var plain: [UInt8]?
    var extended: [UInt8]?
    var scanner = ByteScanner(headerValue)

    while !scanner.isAtEnd {
      scanner.skipWhitespace()
      let nameStart = scanner.index
      while let byte = scanner.peek, byte != UInt8(ascii: "="), byte != UInt8(ascii: ";") {
        _ = scanner.consume(byte)
      }
      let name = trimmingWhitespace(scanner.bytes[nameStart..<scanner.index])
      // The disposition type ("attachment") and stray words have no "=": skip them.
      guard scanner.consume(UInt8(ascii: "=")) else {
        _ = scanner.consume(UInt8(ascii: ";"))
        continue
      }
      scanner.skipWhitespace()
      let value = readValue(&scanner)
      // Skip whatever is left of this parameter (junk after a quoted-string makes it invalid).
      var clean = true
      while let byte = scanner.peek, byte != UInt8(ascii: ";") {
        if byte != 0x20 && byte != 0x09 { clean = false }
        _ = scanner.consume(byte)
      }
      _ = scanner.consume(UInt8(ascii: ";"))
      guard clean, let value else { continue }

      if plain == nil, isName(name, "filename") {
        plain = value
      } else if extended == nil, isName(name, "filename*") {
        extended = value
      }
    }

    if let extended, let decoded = decodeExtendedValue(extended), !decoded.isEmpty {
      return decoded
    }
    if let plain, !plain.isEmpty {
      // Slices are cut at ASCII delimiters and escapes drop only ASCII backslashes, so the
      // bytes are still the valid UTF-8 they came from.
      return String(decoding: plain, as: UTF8.self)
    }
    return nil
  }

  /// Reads a quoted-string (unescaped) or a bare value up to `;` (trailing whitespace
  /// trimmed). Nil for an unterminated quoted-string.
  private static func readValue(_ scanner: inout ByteScanner) -> [UInt8]? {
    if scanner.consume(UInt8(ascii: "\"")) {
      var value: [UInt8] = []
      while let byte = scanner.peek {
        _ = scanner.consume(byte)
        if byte == UInt8(ascii: "\"") { return value }
        if byte == UInt8(ascii: "\\") {
          guard let escaped = scanner.peek else { return nil }
          _ = scanner.consume(escaped)
          value.append(escaped)
        } else {
          value.append(byte)
        }
      }
      return nil
    }
    let start = scanner.index
    while let byte = scanner.peek, byte != UInt8(ascii: ";") { _ = scanner.consume(byte) }
    return Array(trimmingWhitespace(scanner.bytes[start..<scanner.index]))
  }

  /// Decodes an RFC 8187 ext-value: `charset "'" [ language ] "'" value-chars`.
  package static func decodeExtendedValue(_ value: [UInt8]) -> String? {
    guard let firstQuote = value.firstIndex(of: UInt8(ascii: "'")),
      let secondQuote = value[(firstQuote + 1)...].firstIndex(of: UInt8(ascii: "'"))
    else { return nil }
    let charset = String(decoding: value[..<firstQuote].map(ByteScanner.lowercased), as: UTF8.self)
    let encoded = value[(secondQuote + 1)...]

    var bytes: [UInt8] = []
    bytes.reserveCapacity(encoded.count)
    var index = encoded.startIndex
    while index < encoded.endIndex {
      let byte = encoded[index]
      if byte == UInt8(ascii: "%") {
        guard encoded.endIndex - index >= 3, let high = ByteScanner.hexValue(encoded[index + 1]),
          let low = ByteScanner.hexValue(encoded[index + 2])
        else { return nil }
        bytes.append(high << 4 | low)
        index += 3
      } else {
        bytes.append(byte)
        index += 1
      }
    }

    switch charset {
    case "utf-8", "utf8":
      return String(validating: bytes, as: UTF8.self)
    case "iso-8859-1", "latin1":
      // Literal (unescaped) non-ASCII would be UTF-8 from the header, not Latin-1: refuse it.
      guard encoded.allSatisfy({ $0 < 0x80 }) else { return nil }
      var scalars = String.UnicodeScalarView()
      for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
      return String(scalars)
    default:
      return nil
    }
  }

  private static func isName(_ bytes: ArraySlice<UInt8>, _ expected: String) -> Bool {
    bytes.count == expected.utf8.count
      && zip(bytes, expected.utf8).allSatisfy { ByteScanner.lowercased($0) == $1 }
  }

  private static func trimmingWhitespace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    var slice = bytes
    while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
    while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
    return slice
  }
}
