import HaulCore

/// What a rerun does with a finished file Haul made from this URL before it reports it
/// complete: it verifies what it reports. Pure; the executor reads the file's status and seal,
/// hashes when told to, and acts on the verdict.
///
/// - With an expected checksum or a digest the server announced: hash the file, always.
/// - Else, when the file's size, modification and status-change times are as sealed: trust
///   the seal (no read).
/// - Else, when they changed: hash it against the SHA-256 the seal recorded.
///
/// A file whose bytes differ is `modified`: reported as such, never as complete, and fetched
/// again only when the caller asks to overwrite.
enum RerunVerification {
  /// A digest the file must have, and who says so ("the expected checksum").
  struct Expected: Equatable, Sendable {
    var algorithm: Checksum.Algorithm
    var hex: String
    var source: String
  }

  enum Plan: Equatable, Sendable {
    /// Complete without reading it; its SHA-256 as sealed, if known.
    case trust(sha256: String?)
    /// Hash the file with these algorithms, then ask `verdict`.
    case hash(Set<Checksum.Algorithm>)
    /// Changed, and nothing to hash could tell otherwise: the message says how.
    case modified(String)
  }

  enum Verdict: Equatable, Sendable {
    /// Complete; `reseal`: record the file's status again (it changed, its bytes did not).
    case complete(sha256: String?, reseal: Bool)
    case modified(String)
  }

  /// - Parameters:
  ///   - recordedSize: the size the finished-file record gives.
  ///   - seal: the seal on the file, when it has a valid one (records from before seals have none).
  static func plan(
    path: String, status: FileStatus, recordedSize: Int64?, seal: FinishedFileSeal?, expected: [Expected]
  ) -> Plan {
    for size in [recordedSize, seal?.size].compactMap({ $0 }) where size != status.size {
      return .modified(
        "\(path) was changed after haul finished it: it holds \(status.size) bytes, not the \(size) it was "
          + "downloaded with")
    }
    if !expected.isEmpty {
      // SHA-256 too: the result reports it, and the seal compares it.
      return .hash(Set(expected.map(\.algorithm)).union([.sha256]))
    }
    guard let seal else { return .trust(sha256: nil) }
    if seal.describes(status) { return .trust(sha256: seal.sha256) }
    guard seal.sha256 != nil else {
      return .modified(
        "\(path) was changed after haul finished it (its times differ), and no SHA-256 was recorded to tell "
          + "whether its bytes did")
    }
    return .hash([.sha256])
  }

  /// After hashing for `plan`'s `.hash`: `digests` by algorithm, lower-case hex.
  static func verdict(
    path: String, digests: [Checksum.Algorithm: String], status: FileStatus, seal: FinishedFileSeal?,
    expected: [Expected]
  ) -> Verdict {
    for check in expected where digests[check.algorithm] != check.hex {
      return .modified(
        "\(path) does not match \(check.source): \(check.algorithm.rawValue) is \(check.hex), the file has "
          + (digests[check.algorithm] ?? "none"))
    }
    if let sealed = seal?.sha256, let now = digests[.sha256], sealed != now {
      return .modified(
        "\(path) was changed after haul finished it: its SHA-256 is \(now), it was downloaded as \(sealed)")
    }
    let sha256 = digests[.sha256] ?? seal?.sha256
    let sealCurrent = seal.map { $0.describes(status) && ($0.sha256 != nil || sha256 == nil) } ?? false
    return .complete(sha256: sha256, reseal: sha256 != nil && !sealCurrent)
  }
}
