#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `underlying` of the error a manager throws when another holder has its catalog open
/// (`holder`: its pid, where the lock file tells), so that a short-lived command can wait for
/// another one's turn to end instead of failing.
public struct CatalogInUse: Error, Sendable, Equatable {
  public let holder: Int32?
}

/// The one-owner rule of a catalog: an exclusive lock on `CATALOG.lock` (`FileLock`), which
/// holds the owner's pid for the message a second opener gets. The lock belongs to the open
/// file, so a second manager in the same process is refused too; the kernel drops it when the
/// owner dies, however it dies. A lock file is deleted only by the opener that made it, when
/// the catalog is refused (`discardIfCreated`); an opener that locked that file meanwhile sees
/// another file (or none) at the path afterwards, and locks again.
final class CatalogLock: Sendable {
  let path: String
  private let lock: FileLock
  /// Nothing was at `path` before this opener.
  private let created: Bool

  /// The lock files this process holds. One refused while its note names this process, and
  /// not among these, was let go just before and is still shared for a moment with a child
  /// spawned elsewhere in the process (between its fork and its exec): waited for, briefly.
  private static let heldHere = Locked<Set<String>>([])

  init(catalog: String) throws(HaulError) {
    let path = catalog + ".lock"
    self.path = path
    created = Self.identity(path) == nil
    var attempts = 0
    var waits = 0
    while true {
      let acquired: FileLock?
      do {
        acquired = try FileLock.acquire(path, note: "\(getpid())\n")
      } catch {
        guard error.errno == ENOENT else { throw error.haulError }
        let directory = DownloadPaths(target: catalog).directory
        throw HaulError(
          .fileSystem, "the directory \(directory) of the catalog does not exist", hint: "create it first")
      }
      guard let acquired else {
        let holder = FileLock.note(at: path).flatMap { Int32($0.trimmingWhitespace()) }
        if holder == getpid(), waits < 100, !Self.heldHere.withLock({ $0.contains(path) }) {
          waits += 1
          usleep(10_000)
          continue
        }
        throw Self.busy(catalog: catalog, holder: holder)
      }
      // The path still names the file locked: not one another opener deleted meanwhile. Kept
      // at once, never let go and taken again: a child forked elsewhere in the process at that
      // moment would hold the first open file, and with it the lock, until its exec.
      attempts += 1
      if acquired.fileIdentity == Self.identity(path) || attempts == 5 {
        lock = acquired
        break
      }
    }
    Self.heldHere.withLock { _ = $0.insert(path) }
  }

  deinit {
    Self.heldHere.withLock { _ = $0.remove(path) }
  }

  /// The device and inode of the file at `path`, if any.
  private static func identity(_ path: String) -> [UInt64]? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return [UInt64(info.st_dev), UInt64(info.st_ino)]
  }

  /// Deletes the lock file if this opener made it (its catalog was refused), while still holding it.
  func discardIfCreated() {
    guard created else { return }
    _ = unlink(path)
  }

  /// Whether the process that last took the lock of `catalog` is alive (by its pid; a pid
  /// that was reused since reads as alive).
  static func ownerIsAlive(catalog: String) -> Bool {
    guard let note = FileLock.note(at: catalog + ".lock"), let pid = Int32(note.trimmingWhitespace()), pid > 0
    else { return false }
    return kill(pid, 0) == 0 || errno == EPERM
  }

  private static func busy(catalog: String, holder: Int32?) -> HaulError {
    guard let holder else {
      return HaulError(
        .generic, "the catalog \(catalog) is in use by another process",
        hint: "wait until it ends or stop it, or choose another catalog file",
        underlying: CatalogInUse(holder: nil))
    }
    if holder == getpid() {
      return HaulError(
        .generic, "the catalog \(catalog) is already open in this process (pid \(holder))",
        hint: "use the DownloadManager that has it open, or close() it first",
        underlying: CatalogInUse(holder: holder))
    }
    let name = processName(holder).map { " (\($0))" } ?? ""
    return HaulError(
      .generic, "the catalog \(catalog) is in use by process \(holder)\(name)",
      hint: "wait until it ends or stop it (kill \(holder)), or choose another catalog file",
      underlying: CatalogInUse(holder: holder))
  }

  /// The command name of `pid`, where /proc tells it.
  private static func processName(_ pid: Int32) -> String? {
    guard case .success(let bytes) = FileIO.readAll(path: "/proc/\(pid)/comm", limit: 64), !bytes.isEmpty
    else { return nil }
    return String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
  }
}
