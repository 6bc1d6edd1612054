import Dispatch
import FoundationEssentials

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
    package var hexLength: Int {
      switch self {
      case .sha256: 64
      case .sha512: 128
      case .sha1: 40
      case .md5: 32
      }
    }

    /// Accepts aria2c's spelling (`sha-256`) and the common ones (`sha256`, `SHA-256`).
    package init?(name: some StringProtocol) {
      let key = name.lowercased().filter { $0 != "-" && $0 != "_" }
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

extension Checksum {
  /// Lower-case hex of `bytes`, as digests are written.
  package static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text = [UInt8]()
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
  }
}
