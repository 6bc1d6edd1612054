import CFileAttributes

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `NAME.part` file: positional writes, durable syncs, and an exclusive lock that keeps
/// a second process off the same download. The descriptor is immutable; POSIX calls on it are thread-safe.
final class PartFile: Sendable {
  let path: String
  private let fd: Int32

  enum OpenError: Error {
    case busy
    case system(SystemError)
  }

  /// Opens (creating if needed) and locks the file without blocking.
  init(path: String) throws(OpenError) {
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw .system(SystemError("open", errno: errno)) }
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
      let code = errno
      close(fd)
      throw code == EWOULDBLOCK ? .busy : .system(SystemError("flock", errno: code))
    }
    self.path = path
    self.fd = fd
  }

  deinit { close(fd) }

  /// Writes all of `bytes` at `offset`.
  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
    guard let base = bytes.baseAddress else { return }
    var done = 0
    while done < bytes.count {
      let count = pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
      if count < 0 {
        if errno == EINTR { continue }
        throw SystemError("pwrite", errno: errno)
      }
      done += count
    }
  }

  /// Reads up to `buffer.count` bytes at `offset`; returns how many (0 at the end).
  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) -> Int {
    guard let base = buffer.baseAddress else { return 0 }
    while true {
      let count = pread(fd, base, buffer.count, off_t(offset))
      if count >= 0 { return count }
      if errno != EINTR { throw SystemError("pread", errno: errno) }
    }
  }

  /// Makes every completed write durable (data, and the size when it grew).
  func sync() throws(SystemError) {
    guard fdatasync(fd) == 0 else { throw SystemError("fdatasync", errno: errno) }
  }

  func truncate(to length: Int64) throws(SystemError) {
    guard ftruncate(fd, off_t(length)) == 0 else { throw SystemError("ftruncate", errno: errno) }
  }

  func size() -> Int64 {
    var info = stat()
    return fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
  }

  /// Stores `value` as an extended attribute; false where the file system has none.
  @discardableResult
  func setAttribute(_ name: String, _ value: [UInt8]) -> Bool {
    value.withUnsafeBytes { fsetxattr(fd, name, $0.baseAddress, $0.count, 0) == 0 }
  }
}
