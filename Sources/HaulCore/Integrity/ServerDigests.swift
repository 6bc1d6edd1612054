import Dispatch
import FoundationEssentials

/// Digests a server sends for the whole representation: RFC 9530 `Repr-Digest` (and
/// `Content-Digest` on a complete, unencoded response) and the legacy RFC 3230 `Digest`.
package enum ServerDigests {
  /// `[algorithm: lower-case hex]` from the response's headers, for the whole file.
  /// A `206`'s `Content-Digest` covers only its part, so it is not used here.
  package static func wholeFile(_ head: ResponseHead) -> [Checksum.Algorithm: String] {
    var found: [Checksum.Algorithm: String] = [:]
    if let legacy = head.headers["Digest"] { found.merge(parseLegacy(legacy)) { new, _ in new } }
    if head.status == 200, head.headers["Content-Encoding"] == nil,
      let content = head.headers["Content-Digest"]
    {
      found.merge(parseStructured(content)) { new, _ in new }
    }
    if let representation = head.headers["Repr-Digest"] {
      found.merge(parseStructured(representation)) { new, _ in new }
    }
    return found
  }

  /// The strongest of several digests of the same bytes.
  package static func strongest(_ digests: [Checksum.Algorithm: String]) -> (Checksum.Algorithm, String)? {
    for algorithm in [Checksum.Algorithm.sha512, .sha256, .sha1, .md5] {
      if let hex = digests[algorithm] { return (algorithm, hex) }
    }
    return nil
  }

  /// RFC 9530: `sha-256=:BASE64:, sha-512=:BASE64:`.
  package static func parseStructured(_ value: String) -> [Checksum.Algorithm: String] {
    var found: [Checksum.Algorithm: String] = [:]
    for member in value.split(separator: ",") {
      let parts = member.split(separator: "=", maxSplits: 1)
      guard parts.count == 2, let algorithm = Checksum.Algorithm(name: parts[0].trimmingWhitespace()) else {
        continue
      }
      let encoded = parts[1].trimmingWhitespace()
      guard encoded.count >= 2, encoded.first == ":", encoded.last == ":" else { continue }
      if let hex = hex(base64: String(encoded.dropFirst().dropLast()), for: algorithm) {
        found[algorithm] = hex
      }
    }
    return found
  }

  /// RFC 3230: `SHA-256=BASE64, MD5=BASE64` (base64 may itself end in `=`).
  package static func parseLegacy(_ value: String) -> [Checksum.Algorithm: String] {
    var found: [Checksum.Algorithm: String] = [:]
    for member in value.split(separator: ",") {
      guard let equals = member.firstIndex(of: "="),
        let algorithm = Checksum.Algorithm(name: member[..<equals].trimmingWhitespace())
      else { continue }
      let encoded = member[member.index(after: equals)...].trimmingWhitespace()
      if let hex = hex(base64: encoded, for: algorithm) { found[algorithm] = hex }
    }
    return found
  }

  private static func hex(base64: String, for algorithm: Checksum.Algorithm) -> String? {
    guard let data = Data(base64Encoded: base64), data.count * 2 == algorithm.hexLength else { return nil }
    return Checksum.hex(Array(data))
  }
}
