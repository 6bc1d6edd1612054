#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Small POSIX file operations with errno kept as `SystemError`. Files are opened by
/// `SafeFile`'s rules (never through a symbolic link).
enum FileIO {
  /// The file at `path` (not through a link), at most `limit` bytes (EFBIG past it).
  static func readAll(path: String, limit: Int) -> Result<[UInt8], SystemError> {
    let fd = SystemCall.retryingEINTR { open(path, O_RDONLY | SafeFile.openFlags | O_NONBLOCK) }
    guard fd >= 0 else { return .failure(SystemError("open", errno: errno)) }
    defer { close(fd) }
    do {
      return .success(try UserFiles.readAll(descriptor: fd, limit: limit, name: path))
    } catch {
      if case .system(let cause) = error.reason { return .failure(cause) }
      return .failure(SystemError("read", errno: EFBIG))
    }
  }

  static func rename(_ from: String, to: String) throws(SystemError) {
    #if canImport(Glibc)
      _ = try SystemCall.retryingEINTR("rename") { Glibc.rename(from, to) }
    #else
      _ = try SystemCall.retryingEINTR("rename") { Darwin.rename(from, to) }
    #endif
  }

  /// Removes a file; a missing file is fine. A link is removed, never what it points to.
  static func remove(_ path: String) throws(SystemError) {
    guard unlink(path) == 0 || errno == ENOENT else { throw SystemError("unlink", errno: errno) }
  }

  /// Whether anything is at `path` (a link counts, whatever it points to).
  static func exists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  /// Whether `path` is a directory, following a link the user made to one.
  static func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  /// Makes a rename or creation in `directory` durable. The directory is the user's (see
  /// `UserFiles`): every path in it is resolved through it anyway, so a link the user made to it
  /// is followed here too (refusing it would only skip the sync); `O_DIRECTORY` makes sure it is
  /// one, and nothing is ever written through this descriptor. Shared with the callers that
  /// need the same directory synced at the same time (`DirectorySyncs`).
  static func syncDirectory(_ directory: String) {
    DirectorySyncs.shared.syncDirectory(directory)
  }

  /// `syncDirectory` on its own: one `fsync` of the directory, now.
  static func syncDirectoryNow(_ directory: String) {
    let fd = SystemCall.retryingEINTR { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY) }
    guard fd >= 0 else { return }
    _ = SystemCall.retryingEINTR { fsync(fd) }
    close(fd)
  }
}
