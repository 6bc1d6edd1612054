import Foundation

/// An expected digest of the whole file, e.g. from `--checksum sha-256=HEX`.
///
/// ```swift
/// options.checksum = try Checksum(parsing: "sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
/// ```
public struct Checksum: Sendable, Equatable, CustomStringConvertible {
  public enum Algorithm: String, Sendable, CaseIterable {
    case sha256 = "sha-256"
    case sha512 = "sha-512"
    case sha1 = "sha-1"
    case md5 = "md5"

    /// Lower-case hex digits in a digest of this algorithm.
    var hexLength: Int {
      switch self {
      case .sha256: 64
      case .sha512: 128
      case .sha1: 40
      case .md5: 32
      }
    }

    var digest: MessageDigest.Algorithm {
      switch self {
      case .sha256: .sha256
      case .sha512: .sha512
      case .sha1: .sha1
      case .md5: .md5
      }
    }

    /// Accepts aria2c's spelling (`sha-256`) and the common ones (`sha256`, `SHA-256`).
    init?(name: some StringProtocol) {
      let key = name.lowercased().replacingOccurrences(of: "-", with: "").replacingOccurrences(of: "_", with: "")
      switch key {
      case "sha256": self = .sha256
      case "sha512": self = .sha512
      case "sha1": self = .sha1
      case "md5": self = .md5
      default: return nil
      }
    }
  }

  public let algorithm: Algorithm
  /// Lower-case hex.
  public let hex: String

  public init(algorithm: Algorithm, hex: String) throws(HaulError) {
    let hex = hex.lowercased()
    guard hex.count == algorithm.hexLength, hex.allSatisfy(\.isHexDigit) else {
      throw HaulError(
        .invalidInput, "'\(hex)' is not a \(algorithm.rawValue) digest (\(algorithm.hexLength) hex digits)")
    }
    self.algorithm = algorithm
    self.hex = hex
  }

  /// Parses `ALGO=HEX`, e.g. `sha-256=…`.
  public init(parsing text: String) throws(HaulError) {
    guard let equals = text.firstIndex(of: "="), let algorithm = Algorithm(name: text[..<equals]) else {
      throw HaulError(
        .invalidInput, "'\(text)' is not a checksum",
        hint: "write ALGO=HEX with ALGO one of sha-256, sha-512, sha-1, md5")
    }
    try self.init(algorithm: algorithm, hex: String(text[text.index(after: equals)...]))
  }

  public var description: String { "\(algorithm.rawValue)=\(hex)" }
}

/// Digests a server sends for the whole representation: RFC 9530 `Repr-Digest` (and
/// `Content-Digest` on a complete, unencoded response) and the legacy RFC 3230 `Digest`.
enum ServerDigests {
  /// `[algorithm: lower-case hex]` from the response's headers, for the whole file.
  /// A `206`'s `Content-Digest` covers only its part, so it is not used here.
  static func wholeFile(_ head: ResponseHead) -> [Checksum.Algorithm: String] {
    var found: [Checksum.Algorithm: String] = [:]
    if let legacy = head.headers["Digest"] { found.merge(parseLegacy(legacy)) { new, _ in new } }
    if head.status == 200, head.headers["Content-Encoding"] == nil, let content = head.headers["Content-Digest"] {
      found.merge(parseStructured(content)) { new, _ in new }
    }
    if let representation = head.headers["Repr-Digest"] {
      found.merge(parseStructured(representation)) { new, _ in new }
    }
    return found
  }

  /// RFC 9530: `sha-256=:BASE64:, sha-512=:BASE64:`.
  static func parseStructured(_ value: String) -> [Checksum.Algorithm: String] {
    var found: [Checksum.Algorithm: String] = [:]
    for member in value.split(separator: ",") {
      let parts = member.split(separator: "=", maxSplits: 1)
      guard parts.count == 2, let algorithm = Checksum.Algorithm(name: parts[0].trimmingWhitespace()) else {
        continue
      }
      let encoded = parts[1].trimmingWhitespace()
      guard encoded.count >= 2, encoded.first == ":", encoded.last == ":" else { continue }
      if let hex = hex(base64: String(encoded.dropFirst().dropLast()), for: algorithm) { found[algorithm] = hex }
    }
    return found
  }

  /// RFC 3230: `SHA-256=BASE64, MD5=BASE64` (base64 may itself end in `=`).
  static func parseLegacy(_ value: String) -> [Checksum.Algorithm: String] {
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
    return MessageDigest.hex(Array(data))
  }
}
