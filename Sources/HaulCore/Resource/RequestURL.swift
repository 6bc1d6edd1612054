/// Turns what a user typed into a URL that can go on the wire.
package enum RequestURL {
  /// Checks the scheme and host, drops the fragment, and percent-encodes the bytes that
  /// may not appear raw in a request target (spaces, non-ASCII, quotes…), leaving existing `%XX` alone.
  ///
  ///     normalize("http://h/a file ü.txt") == "http://h/a%20file%20%C3%BC.txt"
  package static func normalize(_ text: String) throws(HaulError) -> String {
    let trimmed = text.trimmingWhitespace()
    guard let schemeEnd = trimmed.firstRange(of: "://") else {
      throw HaulError(
        .invalidInput, "'\(text)' is not a URL", hint: "give a full URL such as https://example.com/file")
    }
    let scheme = trimmed[..<schemeEnd.lowerBound].lowercased()
    // FTP and SFTP go through libcurl too, resumed with the same state (see Transport/FTPResponse.swift
    // and Transport/SFTPTransfer.swift).
    guard ["http", "https", "ftp", "ftps", "sftp"].contains(scheme) else {
      throw HaulError(
        .invalidInput, "unsupported URL scheme '\(scheme)'",
        hint: "haul downloads http://, https://, ftp://, ftps:// and sftp:// URLs")
    }
    let rest = trimmed[schemeEnd.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    let host = authority.split(separator: "@").last.map { String($0) } ?? ""
    guard !host.isEmpty, !host.hasPrefix(":"), !authority.contains(where: { $0 == " " || $0.isNewline })
    else {
      throw HaulError(.invalidInput, "'\(text)' has no usable host name")
    }
    var target = rest[authorityEnd...]
    if let hash = target.firstIndex(of: "#") { target = target[..<hash] }
    var encoded = ""
    for byte in target.utf8 {
      if isAllowedRaw(byte) {
        encoded.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        encoded +=
          "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
      }
    }
    return scheme + "://" + authority + (encoded.isEmpty ? "/" : encoded)
  }

  /// The URL without the password of its userinfo (`http://user:pw@h/` → `http://user@h/`):
  /// the form written to state files, which must never hold secrets.
  package static func withoutPassword(_ url: String) -> String {
    guard let schemeEnd = url.firstRange(of: "://") else { return url }
    let rest = url[schemeEnd.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
    let userinfo = rest[..<at]
    guard let colon = userinfo.firstIndex(of: ":") else { return url }
    return String(url[..<schemeEnd.upperBound]) + userinfo[..<colon] + rest[at...]
  }

  private static func isAllowedRaw(_ byte: UInt8) -> Bool {
    guard byte > 0x20, byte < 0x7F else { return false }
    switch byte {
    case UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"), UInt8(ascii: "^"),
      UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"):
      return false
    default:
      return true
    }
  }
}

/// Header field syntax (RFC 9110 §5): a token name and a value without CR, LF or NUL.
package enum HeaderField {
  package static func isValidName(_ name: String) -> Bool {
    !name.isEmpty
      && name.utf8.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
          || "!#$%&'*+-.^_`|~".utf8.contains(byte)
      }
  }

  package static func isValidValue(_ value: String) -> Bool {
    !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
  }
}

extension StringProtocol {
  /// Without leading and trailing whitespace. Only the ends are looked at and the rest is
  /// copied whole (every header line of every response passes here).
  package func trimmingWhitespace() -> String {
    let text = Substring(self)
    let scalars = text.unicodeScalars
    var start = scalars.startIndex
    var end = scalars.endIndex
    while start < end, scalars[start].properties.isWhitespace { start = scalars.index(after: start) }
    while start < end {
      let last = scalars.index(before: end)
      guard scalars[last].properties.isWhitespace else { break }
      end = last
    }
    return String(Substring(scalars[start..<end]))
  }
}
