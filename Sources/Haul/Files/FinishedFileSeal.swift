/// What Haul saw of a file it had just finished, kept in an extended attribute of the file
/// (`user.haul.seal`), so that a rerun can tell "untouched since" from "changed" without
/// reading the file, and when it changed, whether its bytes did (`sha256`).
///
/// The attribute is untrusted input like every file Haul did not just write: `decode` takes
/// only the exact text `encode` writes, within `maximumSize` bytes, or nothing.
///
///     haul-seal 1
///     size 300000
///     modified 1764612345123456789
///     changed-by 1764612346123456789
///     sha-256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
///
/// The status-change time (ctime) cannot be recorded exactly: writing the attribute changes
/// it. So the seal holds a bound taken just before it is written (`changedBy`): any change
/// later than that (a write, `touch`, `chmod`, a rename) moves ctime past it.
struct FinishedFileSeal: Equatable, Sendable {
  static let attribute = "user.haul.seal"
  /// A seal is a few short lines; anything longer is not one.
  static let maximumSize = 512
  /// How long after the clock is read the attribute's write may take and still leave ctime
  /// within the bound (a slower write only costs the next rerun a hash).
  static let writeAllowance: Int64 = 1_000_000_000

  /// Bytes in the file.
  var size: Int64
  /// Its modification time, nanoseconds since 1970.
  var modified: Int64
  /// Its status-change time was at most this when sealed, nanoseconds since 1970.
  var changedBy: Int64
  /// The SHA-256 of its bytes (lower-case hex), when it was computed.
  var sha256: String?

  /// Whether `status` is the file as sealed: same size and modification time, and no status
  /// change after the seal was written.
  func describes(_ status: FileStatus) -> Bool {
    status.size == size && status.modified == modified && status.changed <= changedBy
  }

  func encode() -> [UInt8] {
    var text = "haul-seal 1\nsize \(size)\nmodified \(modified)\nchanged-by \(changedBy)\n"
    if let sha256 { text += "sha-256 \(sha256)\n" }
    return Array(text.utf8)
  }

  /// The seal in `bytes`, or nil unless they are exactly what `encode` writes.
  static func decode(_ bytes: [UInt8]) -> FinishedFileSeal? {
    guard bytes.count <= maximumSize, bytes.last == UInt8(ascii: "\n") else { return nil }
    let lines = bytes.dropLast().split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    guard lines.count == 4 || lines.count == 5, Array(lines[0]) == Array("haul-seal 1".utf8),
      let size = number(lines[1], key: "size"), let modified = number(lines[2], key: "modified"),
      let changedBy = number(lines[3], key: "changed-by")
    else { return nil }
    var sha256: String?
    if lines.count == 5 {
      let prefix = Array("sha-256 ".utf8)
      let line = Array(lines[4])
      let hex = line.dropFirst(prefix.count)
      guard line.starts(with: prefix), hex.count == 64,
        hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
      else { return nil }
      sha256 = String(decoding: hex, as: UTF8.self)
    }
    return FinishedFileSeal(size: size, modified: modified, changedBy: changedBy, sha256: sha256)
  }

  /// `key` and a space, then a decimal Int64 of 1 to 19 digits without leading zeros (as
  /// `encode` writes it, so that every seal has one spelling).
  private static func number(_ line: ArraySlice<UInt8>, key: String) -> Int64? {
    let prefix = Array((key + " ").utf8)
    let line = Array(line)
    let digits = line.dropFirst(prefix.count)
    guard line.starts(with: prefix), (1...19).contains(digits.count),
      digits.count == 1 || digits.first != UInt8(ascii: "0"),
      digits.allSatisfy({ (0x30...0x39).contains($0) })
    else { return nil }
    return Int64(String(decoding: digits, as: UTF8.self))
  }
}

/// The parts of a file's status a seal compares: size, modification and status-change times
/// (nanoseconds since 1970).
struct FileStatus: Equatable, Sendable {
  var size: Int64
  var modified: Int64
  var changed: Int64
}
