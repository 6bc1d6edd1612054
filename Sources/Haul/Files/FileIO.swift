#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Small POSIX file operations with errno kept as `SystemError`.
enum FileIO {
  static func readAll(path: String, limit: Int) -> Result<[UInt8], SystemError> {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return .failure(SystemError("open", errno: errno)) }
    defer { close(fd) }
    var bytes = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while bytes.count <= limit {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        return .failure(SystemError("read", errno: errno))
      }
      if count == 0 { break }
      bytes.append(contentsOf: chunk[0..<count])
    }
    return .success(bytes)
  }

  static func writeAll(path: String, bytes: [UInt8], sync: Bool) throws(SystemError) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw SystemError("open", errno: errno) }
    defer { close(fd) }
    var written = 0
    while written < bytes.count {
      let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
      if count < 0 {
        if errno == EINTR { continue }
        throw SystemError("write", errno: errno)
      }
      written += count
    }
    if sync, fsync(fd) != 0 { throw SystemError("fsync", errno: errno) }
  }

  static func rename(_ from: String, to: String) throws(SystemError) {
    guard Glibc.rename(from, to) == 0 else { throw SystemError("rename", errno: errno) }
  }

  /// Removes a file; a missing file is fine.
  static func remove(_ path: String) throws(SystemError) {
    guard unlink(path) == 0 || errno == ENOENT else { throw SystemError("unlink", errno: errno) }
  }

  static func exists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  static func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  /// Makes a rename or creation in `directory` durable.
  static func syncDirectory(_ directory: String) {
    let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
  }
}
