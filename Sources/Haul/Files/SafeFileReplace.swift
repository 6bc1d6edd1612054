import CFileSystem
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Rule 4 of `SafeFile`: replacing a small file through a temporary file.
extension SafeFile {
  /// Replaces what `path` holds with `bytes`, atomically and durably: the bytes go to a new
  /// temporary file in the same directory, which is synced and renamed over `path`. A crash
  /// leaves either the old contents or the new; a failure (disk full) removes the temporary
  /// file, and `path` keeps what it held. Does not sync the directory.
  ///
  ///     try SafeFile.replace(statePath, with: encoded)
  ///     try SafeFile.replace(secretPath, with: Array(token.utf8), mode: 0o600)
  package static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o644)
    throws(LocalFileError)
  {
    try replace(path, with: bytes, mode: mode, unnamed: unnamedFilesWork) {
      // A fresh generator per name, not one captured by the closure: the system's has no
      // state, and ThreadSanitizer faults on the address of a captured empty value.
      var random = SystemRandomNumberGenerator()
      return temporaryPath(beside: path, using: &random)
    }
  }

  /// `replace` with the choice of an unnamed temporary file and of the names tried (tests).
  static func replace(
    _ path: String, with bytes: [UInt8], mode: mode_t, unnamed: Bool, names: () -> String
  ) throws(LocalFileError) {
    var descriptor: Int32 = -1
    var temporary: String?
    if unnamed {
      descriptor = SystemCall.retryingEINTR { haul_open_unnamed(directory(of: path), mode) }
      // Where the file system has no unnamed files, a named one does the same job.
      guard descriptor >= 0 || [EOPNOTSUPP, ENOTSUP, EISDIR, EINVAL].contains(errno) else {
        throw LocalFileError(path, call: "open", errno: errno)
      }
    }
    if descriptor < 0 {
      let (created, name) = try createTemporary(for: path, mode: mode, names: names)
      descriptor = created
      temporary = name
    }
    defer { close(descriptor) }
    do throws(SystemError) {
      try writeAll(descriptor, bytes)
      _ = try SystemCall.retryingEINTR("fsync") { fsync(descriptor) }
      if temporary == nil { temporary = try link(descriptor, names: names) }
      guard let temporary else { throw SystemError("linkat", errno: EEXIST) }
      _ = try SystemCall.retryingEINTR("rename") { rename(temporary, path) }
    } catch {
      if let temporary { unlink(temporary) }
      throw LocalFileError(path, .system(error))
    }
  }

  /// Creates a new file beside `path` under an unguessable name (`temporaryPath`), exclusively
  /// (rule 2): for a file that another library opens by name (SQLite), built before it is
  /// renamed or linked into place. The caller closes the descriptor and removes or renames the file.
  ///
  ///     let (descriptor, temporary) = try SafeFile.createTemporary(beside: catalogPath)
  package static func createTemporary(
    beside path: String, mode: mode_t = 0o600
  ) throws(LocalFileError) -> (descriptor: Int32, path: String) {
    return try createTemporary(for: path, mode: mode) {
      var random = SystemRandomNumberGenerator()
      return temporaryPath(beside: path, using: &random)
    }
  }

  /// Creates a temporary file under the first of `names` that is free (O_EXCL, rule 2).
  private static func createTemporary(
    for path: String, mode: mode_t, names: () -> String
  ) throws(LocalFileError) -> (descriptor: Int32, path: String) {
    var last = LocalFileError(path, call: "open", errno: EEXIST)
    for _ in 0..<8 {
      let candidate = names()
      do {
        let file = try createExclusive(candidate, access: .readWrite, mode: mode)
        return (file.takeDescriptor(), candidate)
      } catch {
        guard error.errno == EEXIST || error.reason == .symbolicLink else {
          throw LocalFileError(path, error.reason)
        }
        last = LocalFileError(path, error.reason)
      }
    }
    throw last
  }

  /// Names the unnamed file `descriptor` with the first of `names` that is free.
  private static func link(_ descriptor: Int32, names: () -> String) throws(SystemError) -> String {
    for _ in 0..<8 {
      let candidate = names()
      if SystemCall.retryingEINTR({ haul_link_unnamed(descriptor, candidate) }) == 0 { return candidate }
      guard errno == EEXIST else { throw SystemError("linkat", errno: errno) }
    }
    throw SystemError("linkat", errno: EEXIST)
  }

  /// Whether unnamed temporary files can be given a name (Linux with /proc): checked once.
  static let unnamedFilesWork: Bool = {
    #if os(Linux)
      access("/proc/self/fd", X_OK) == 0
    #else
      false
    #endif
  }()

  /// `NAME.tmp-` and 12 random letters and digits beside `path` (NAME shortened to keep the
  /// whole name within 255 bytes).
  package static func temporaryPath(beside path: String, using random: inout some RandomNumberGenerator)
    -> String
  {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    var suffix = ".tmp-"
    for _ in 0..<12 { suffix.append(alphabet[Int.random(in: 0..<alphabet.count, using: &random)]) }
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { String(path[...$0]) } ?? ""
    var name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    while !name.isEmpty, name.utf8.count + suffix.utf8.count > 255 { name.removeLast() }
    return directory + name + suffix
  }

  /// Whether `name` is one of `temporaryPath(beside: path)`'s names (to find leftovers).
  package static func isTemporaryName(_ name: String, beside path: String) -> Bool {
    let base = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    let random = name.suffix(12)
    let stem = name.dropLast(12)
    guard random.count == 12, random.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
      stem.hasSuffix(".tmp-"), stem.count > 5
    else { return false }
    return base.hasPrefix(String(stem.dropLast(5)))
  }

  /// Removes the temporary copies of `path` a killed writer left between writing one and renaming
  /// it into place (kill -9 mid-commit). Only for a caller that holds the lock on `path`'s
  /// download: no other writer of `path` can then be midway. Exact names only (a name shortened
  /// to 255 bytes could be another file's), and unlink never follows a link.
  package static func removeLeftoverTemporaries(beside path: String) {
    let directory = directory(of: path)
    let base = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    for name in names where name.hasPrefix(base + ".tmp-") && isTemporaryName(name, beside: path) {
      _ = unlink(directory + "/" + name)
    }
  }

  /// The directory part of `path`, "." for a bare name.
  static func directory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}
