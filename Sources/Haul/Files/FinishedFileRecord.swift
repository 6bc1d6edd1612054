import CFileSystem

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A finished file remembers where it came from in an extended attribute, so a rerun can tell
/// "Haul made this from that URL, and this is its version" without a sidecar or a new download.
enum FinishedFileRecord {
  static let attribute = "user.haul.state"

  /// Attaches the record to the `.part` file before its rename, so the final file always has it.
  static func attach(_ state: ResumeState, to part: PartFile) {
    part.setAttribute(attribute, StateJournal.encode(state))
  }

  /// The record on `path`, if it has one that still describes the file (same size).
  static func read(at path: String) -> ResumeState? {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    let count = buffer.withUnsafeMutableBytes { getxattr(path, attribute, $0.baseAddress, $0.count) }
    guard count > 0, let state = try? StateJournal.decode(Array(buffer.prefix(count))) else { return nil }
    var info = stat()
    guard stat(path, &info) == 0, let total = state.totalBytes, Int64(info.st_size) == total else {
      return nil
    }
    return state
  }
}
