#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Paths the user names: the directory to download into, an input list, standard input. They
/// are the user's own, so they are followed like any path typed at a shell (a Downloads folder
/// that is a symbolic link works, `-i <(command)` reads a pipe); only what Haul creates or reuses
/// inside them follows `SafeFile`'s rules.
package enum UserFiles {
  /// Everything `descriptor` has to read (a file, standard input, a pipe or FIFO) up to its end,
  /// at most `limit` bytes. `name` names it in errors ("standard input").
  ///
  ///     let list = try UserFiles.readAll(descriptor: STDIN_FILENO, limit: 16 << 20, name: "standard input")
  package static func readAll(descriptor: Int32, limit: Int, name: String) throws(LocalFileError) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      // One byte more than allowed tells "exactly at the limit" from "over it".
      let wanted = min(chunk.count, limit + 1 - bytes.count)
      let count = chunk.withUnsafeMutableBytes { buffer in
        SystemCall.retryingEINTR { read(descriptor, buffer.baseAddress, wanted) }
      }
      if count < 0 { throw LocalFileError(name, call: "read", errno: errno) }
      if count == 0 { return bytes }
      bytes.append(contentsOf: chunk[0..<count])
      if bytes.count > limit { throw LocalFileError(name, .tooLarge(limit: limit)) }
    }
  }

  /// The contents of the file the user named at `path`, at most `limit` bytes; a FIFO is read
  /// until its writer closes it.
  ///
  ///     let list = try UserFiles.readAll(path: "urls.txt", limit: 16 << 20)
  package static func readAll(path: String, limit: Int) throws(LocalFileError) -> [UInt8] {
    let descriptor = SystemCall.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
    guard descriptor >= 0 else { throw LocalFileError(path, call: "open", errno: errno) }
    defer { close(descriptor) }
    var info = stat()
    if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
      throw LocalFileError(path, .notRegular("a directory"))
    }
    do {
      return try readAll(descriptor: descriptor, limit: limit, name: path)
    } catch {
      throw LocalFileError(path, error.reason)
    }
  }

  /// Checks that `path` is a directory this process can create files in, before any request:
  /// it exists, is a directory (a symbolic link to one is fine), and is writable and searchable
  /// by the effective user on a file system mounted read-write.
  ///
  /// - Throws: `.fileSystem` naming the directory and what is wrong with it.
  package static func requireWritableDirectory(_ path: String) throws(HaulError) {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let code = errno
      let cause = SystemError("stat", errno: code)
      switch code {
      case ENOENT:
        throw HaulError(
          .fileSystem, "the directory \(path) does not exist",
          hint: "create it first, or choose another directory",
          underlying: cause)
      case ENOTDIR:
        throw HaulError(.fileSystem, "\(path) is not a directory: a part of it is a file", underlying: cause)
      case EACCES:
        throw HaulError(
          .fileSystem, "cannot reach the directory \(path): permission denied",
          hint: "choose a directory you can write to", underlying: cause)
      default:
        throw HaulError(.fileSystem, "cannot use the directory \(path): \(cause)", underlying: cause)
      }
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw HaulError(
        .fileSystem, "\(path) is not a directory (it is \(LocalFileError.kind(ofMode: info.st_mode)))",
        hint: "choose a directory, or another file name")
    }
    // The effective user's permission (AT_EACCESS), as the creates will be checked; EROFS comes
    // even for root, whom the permission bits do not stop.
    guard faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS) == 0 else {
      let code = errno
      let cause = SystemError("faccessat", errno: code)
      switch code {
      case EROFS:
        throw HaulError(
          .fileSystem, "the directory \(path) is on a read-only file system",
          hint: "choose a directory on a writable file system", underlying: cause)
      case EACCES, EPERM:
        throw HaulError(
          .fileSystem, "cannot write to the directory \(path): permission denied",
          hint: "choose a directory you can write to", underlying: cause)
      default:
        throw HaulError(.fileSystem, "cannot write to the directory \(path): \(cause)", underlying: cause)
      }
    }
  }
}
