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
/// leaves either the old state or the new one, never a torn mix (the very first state is
/// written in place: torn, it fails its checksum and the download starts over).
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
  static func load(from path: String) throws(HaulError) -> Result<ResumeState, LoadError>? {
    let bytes: [UInt8]
    switch FileIO.readAll(path: path, limit: 1 << 20) {
    case .success(let read): bytes = read
    case .failure(let error) where error.errno == ENOENT: return nil
    case .failure(let error):
      throw HaulError(.fileSystem, "cannot read the state file \(path)", underlying: error)
    }
    do { return .success(try decode(bytes)) } catch { return .failure(error) }
  }

  /// Replaces the state at `path` durably: temporary file, fsync, rename.
  static func save(_ state: ResumeState, to path: String) throws(HaulError) {
    let temporary = path + ".tmp"
    do {
      // The first state of a download replaces nothing, so it needs no temporary file: a torn
      // one fails its checksum, and the next run starts over rather than trust it.
      guard FileIO.exists(path) else {
        try FileIO.writeAll(path: path, bytes: encode(state), sync: true)
        return
      }
      try FileIO.writeAll(path: temporary, bytes: encode(state), sync: true)
      try FileIO.rename(temporary, to: path)
    } catch {
      throw HaulError(
        .fileSystem, "cannot save the download state to \(path): \(error)", underlying: error)
    }
  }

  private static func sha256Hex(_ bytes: [UInt8]) -> String {
    guard let digest = try? MessageDigest(.sha256) else { return "" }
    digest.update(bytes)
    return MessageDigest.hex(digest.finish())
  }
}
