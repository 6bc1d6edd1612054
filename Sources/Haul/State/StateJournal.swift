import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Reads and writes the sidecar state file `NAME.haul`.
///
/// Format (text, three lines): `haul-state 1`, the state as JSON, `sha256 <hex of the JSON line>`.
/// Writes go to a temporary file that is synced and renamed over the old one, so a crash
/// leaves either the old state or the new one, never a torn mix. The file is opened and
/// replaced by `SafeFile`'s rules.
enum StateJournal {
  static let magic = "haul-state"
  static let version = 1

  enum LoadError: Error, Equatable, Sendable {
    /// Not a Haul state file, truncated, or its checksum does not match.
    case corrupt(String)
    /// Written by a Haul that uses another format version.
    case unsupportedVersion(Int)
  }

  static func encode(_ state: ResumeState) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // Encoding these plain fields cannot fail; fall back to an empty object to stay total.
    let json = (try? encoder.encode(state)).map { Array($0) } ?? Array("{}".utf8)
    let digest = sha256Hex(json)
    return Array("\(magic) \(version)\n".utf8) + json + Array("\nsha256 \(digest)\n".utf8)
  }

  static func decode(_ bytes: [UInt8]) throws(LoadError) -> ResumeState {
    let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    guard lines.count >= 3, lines.count <= 4, lines.count == 3 || lines[3].isEmpty else {
      throw .corrupt("expected three lines")
    }
    let header = String(decoding: lines[0], as: UTF8.self).split(separator: " ")
    guard header.count == 2, header[0] == magic, let found = Int(header[1]) else {
      throw .corrupt("not a Haul state file")
    }
    guard found == version else { throw .unsupportedVersion(found) }
    let json = Array(lines[1])
    guard String(decoding: lines[2], as: UTF8.self) == "sha256 \(sha256Hex(json))" else {
      throw .corrupt("checksum mismatch")
    }
    let state: ResumeState
    do {
      state = try JSONDecoder().decode(ResumeState.self, from: Data(json))
    } catch {
      throw .corrupt("unreadable JSON")
    }
    guard isConsistent(state) else { throw .corrupt("inconsistent byte ranges") }
    return state
  }

  /// Ranges sorted, disjoint, non-empty, non-negative and inside the total.
  static func isConsistent(_ state: ResumeState) -> Bool {
    var previousEnd: Int64 = -1
    for range in state.ranges {
      guard range.start >= 0, range.end > range.start, range.start > previousEnd else { return false }
      if let total = state.totalBytes, range.end > total { return false }
      previousEnd = range.end
    }
    if let total = state.totalBytes, total < 0 { return false }
    return true
  }

  /// The state at `path`, or nil when there is no file.
  ///
  /// - Throws: `.fileSystem` when the file cannot be read, or is not one Haul may reuse (a
  ///   symbolic link, a file with other names or another owner, not a regular file: see `SafeFile`).
  static func load(from path: String) throws(HaulError) -> Result<ResumeState, LoadError>? {
    let bytes: [UInt8]
    do {
      bytes = try SafeFile.contents(of: path, limit: maximumSize)
    } catch {
      switch error.reason {
      case .system(let cause) where cause.errno == ENOENT: return nil
      case .tooLarge: return .failure(.corrupt("larger than \(maximumSize) bytes"))
      case .system(let cause):
        throw HaulError(.fileSystem, "cannot read the state file \(path): \(cause)", underlying: cause)
      default: throw error.haulError
      }
    }
    do { return .success(try decode(bytes)) } catch { return .failure(error) }
  }

  /// A state file is a few hundred bytes; anything this large is not one.
  static let maximumSize = 1 << 20

  /// Replaces the state at `path` durably: a new temporary file (unnamed, or under a random
  /// name), fsync, rename over `path`. A write that fails (disk full) leaves no temporary file
  /// and the previous state in place. Never writes through a link at `path`: the rename
  /// replaces the name.
  static func save(_ state: ResumeState, to path: String) throws(HaulError) {
    do {
      try SafeFile.replace(path, with: encode(state))
    } catch {
      let cause = error.haulError
      throw HaulError(
        .fileSystem, "cannot save the download state: \(cause.message)", hint: cause.hint,
        underlying: cause.underlying)
    }
    StateFileIndex.saved(path)
  }

  /// Removes the state file at `path` (none there is fine).
  static func remove(at path: String) throws(SystemError) {
    try FileIO.remove(path)
    StateFileIndex.removed(path)
  }

  private static func sha256Hex(_ bytes: [UInt8]) -> String {
    guard let digest = try? MessageDigest(.sha256) else { return "" }
    digest.update(bytes)
    return MessageDigest.hex(digest.finish())
  }
}
