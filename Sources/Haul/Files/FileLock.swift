#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An exclusive lock between processes, held on a file of its own (opened by `SafeFile`'s
/// rules, so a link planted at its name is refused, never truncated) until this object is
/// released or the process ends, however it ends. `flock` belongs to the open file, so a second
/// `FileLock` on the same path in the same process is refused too. Never delete a lock file:
/// a process waiting to open it would then lock a file nobody else sees.
///
///     guard let lock = try FileLock.acquire(catalog + ".lock", note: "\(getpid())\n") else {
///       throw busy(holder: FileLock.note(at: catalog + ".lock"))
///     }
package final class FileLock: Sendable {
  package let path: String
  private let descriptor: Int32

  private init(path: String, descriptor: Int32) {
    self.path = path
    self.descriptor = descriptor
  }

  /// Takes the lock at `path` without waiting, creating the file (mode 0600) if needed, and
  /// leaves `note` in it for whoever finds it taken (e.g. the holder's pid); nil when another
  /// process, or another `FileLock` in this one, holds it.
  package static func acquire(_ path: String, note: String? = nil) throws(LocalFileError) -> FileLock? {
    let file = try SafeFile.openOrCreate(path, mode: 0o600)
    let locked: Bool
    do { locked = try file.tryLock() } catch { throw LocalFileError(path, .system(error)) }
    guard locked else { return nil }
    if let note {
      // Only for messages: the lock does not depend on it.
      let bytes = Array(note.utf8)
      _ = SystemCall.retryingEINTR { ftruncate(file.descriptor, 0) }
      _ = bytes.withUnsafeBytes { buffer in
        SystemCall.retryingEINTR { pwrite(file.descriptor, buffer.baseAddress, buffer.count, 0) }
      }
    }
    return FileLock(path: path, descriptor: file.takeDescriptor())
  }

  /// The note the holder of the lock at `path` left, if there is one that can be read.
  package static func note(at path: String) -> String? {
    guard let bytes = try? SafeFile.contents(of: path, limit: 4096), !bytes.isEmpty else { return nil }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The device and inode of the locked file, to tell whether its path still names it.
  package var fileIdentity: [UInt64]? {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return nil }
    return [UInt64(info.st_dev), UInt64(info.st_ino)]
  }

  deinit { close(descriptor) }
}
