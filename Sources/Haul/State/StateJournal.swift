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
    let json = json(state)
    let digest = sha256Hex(json)
    return Array("\(magic) \(version)\n".utf8) + json + Array("\nsha256 \(digest)\n".utf8)
  }

  /// The state as one line of JSON, the bytes `JSONEncoder` writes with `.sortedKeys` and
  /// `.withoutEscapingSlashes` (a test compares them), written directly: every download
  /// saves its state at least twice, and for small files `JSONEncoder` cost more than the
  /// rest of the download's bookkeeping. `JSONDecoder` reads it back.
  static func json(_ state: ResumeState) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(320)
    var opened = false
    func key(_ name: String) {
      out.append(opened ? UInt8(ascii: ",") : UInt8(ascii: "{"))
      opened = true
      string(name)
      out.append(UInt8(ascii: ":"))
    }
    func string(_ text: String) {
      out.append(UInt8(ascii: "\""))
      for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
        case 0x08: out += Array("\\b".utf8)
        case 0x0C: out += Array("\\f".utf8)
        case 0x0A: out += Array("\\n".utf8)
        case 0x0D: out += Array("\\r".utf8)
        case 0x09: out += Array("\\t".utf8)
        case 0x00..<0x20:
          let hex = Array("0123456789abcdef".utf8)
          out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        default: out.append(byte)
        }
      }
      out.append(UInt8(ascii: "\""))
    }
    func number(_ value: Int64) { out += Array(String(value).utf8) }
    if let digests = state.digests {
      key("digests")
      out.append(UInt8(ascii: "{"))
      for (index, name) in digests.keys.sorted().enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        string(name)
        out.append(UInt8(ascii: ":"))
        string(digests[name] ?? "")
      }
      out.append(UInt8(ascii: "}"))
    }
    if let etag = state.etag {
      key("etag")
      string(etag)
    }
    if let finalURL = state.finalURL {
      key("finalURL")
      string(finalURL)
    }
    if let lastModified = state.lastModified {
      key("lastModified")
      string(lastModified)
    }
    key("ranges")
    out.append(UInt8(ascii: "["))
    for (index, range) in state.ranges.enumerated() {
      out += Array((index > 0 ? ",{\"end\":" : "{\"end\":").utf8)
      number(range.end)
      out += Array(",\"start\":".utf8)
      number(range.start)
      out.append(UInt8(ascii: "}"))
    }
    out.append(UInt8(ascii: "]"))
    if let totalBytes = state.totalBytes {
      key("totalBytes")
      number(totalBytes)
    }
    key("url")
    string(state.url)
    out.append(UInt8(ascii: "}"))
    return out
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
