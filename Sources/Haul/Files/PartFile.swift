import CFileSystem
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `NAME.part` file: positional writes, durable syncs, and an exclusive lock that keeps
/// a second process off the same download. The descriptors are immutable; POSIX calls on them
/// are thread-safe.
///
/// Aligned blocks can be written with direct I/O (`writeDirect`): they skip the page cache,
/// which costs less CPU than copying every byte into it and leaves the user's cached files alone.
/// Only blocks of `directMinimum` bytes or more: a small file's single block costs less through
/// the page cache than a second open of the file and a direct write.
final class PartFile: Sendable {
  let path: String
  /// This open created the file (`O_EXCL`: a new one, not a file that was there).
  let created: Bool
  private let fd: Int32
  /// The locked file (nil for a stream, or where `fstat` failed).
  private let fileID: FileID?
  /// The same file opened with O_DIRECT, by the first write of `directMinimum` bytes or more.
  private let direct: Locked<DirectDescriptor>
  /// For a stream (standard output, a FIFO, a device): the bytes written so far. Nil for a file.
  private let streamed: Locked<StreamedBytes>?
  /// The locked file, while this object holds its lock (see `lockedHere`); nil for a stream.
  private let lockHeld: Locked<FileID?>

  /// A file by device and inode.
  struct FileID: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
  }
  /// The files this process holds locked: a second download of one file in the same process
  /// (two of a manager's, or of a daemon's) is told apart from another process's.
  private static let lockedHere = Locked<Set<FileID>>([])

  /// The alignment of memory, offsets and lengths for `writeDirect`.
  static let directAlignment = Int(HAUL_DIRECT_ALIGNMENT)

  /// The smallest write that goes past the page cache (and opens the direct descriptor). A
  /// download's blocks are 1 MiB; a small file's one block, or a slow connection's aged one,
  /// stays below: 1,000 files of 100 KiB make 2,400 fewer system calls (an open, an `fstat` and
  /// a close each), and their writes no longer wait for the disk (the sync before the rename
  /// does, as before).
  static let directMinimum = 256 * 1024

  private enum DirectDescriptor {
    /// No write large enough yet.
    case notOpened
    case open(Int32)
    /// The file system refused a direct read or write (a stricter alignment): every read and
    /// write goes through the page cache; the descriptor is closed with the file (another
    /// thread may still be using it).
    case refused(Int32)
    /// Turned off, a stream, or no direct I/O on this file system.
    case unusable
  }

  enum OpenError: Error {
    /// Locked by another open: `here`, by this process.
    case busy(here: Bool)
    case system(SystemError)
    /// Something Haul must not write through is at the name (see `SafeFile`).
    case refused(LocalFileError)
  }

  /// Opens and locks the file without blocking: reuses it only if `SafeFile`'s rules allow (a
  /// regular file with one link, owned by this user, not a symbolic link), else creates it.
  /// `directIO: false` keeps every write in the page cache (tests of that path). `seen`: what a
  /// look at the path just before found (`SafeFile.openOrCreate`).
  init(path: String, directIO: Bool = true, seen: SafeFile.Seen = .unknown) throws(OpenError) {
    let file: SafeFile
    do { file = try SafeFile.openOrCreate(path, seen: seen) } catch {
      if case .system(let cause) = error.reason { throw .system(cause) }
      throw .refused(error)
    }
    let locked: Bool
    do { locked = try file.tryLock() } catch { throw .system(error) }
    let id = (try? file.status()).map { FileID(device: UInt64($0.st_dev), inode: UInt64($0.st_ino)) }
    guard locked else {
      throw .busy(here: id.map { id in Self.lockedHere.withLock { $0.contains(id) } } ?? false)
    }
    if let id { Self.lockedHere.withLock { _ = $0.insert(id) } }
    self.created = file.created
    let fd = file.takeDescriptor()
    self.path = path
    self.fd = fd
    self.fileID = id
    self.direct = Locked(directIO && id != nil ? .notOpened : .unusable)
    self.streamed = nil
    self.lockHeld = Locked(id)
  }

  /// A stream target (`DownloadRun+Stream`): `descriptor` (this object's, closed with it) is
  /// written in order, each write where the last ended; nothing is read back, synced, truncated
  /// or marked, and a write anywhere else fails with ESPIPE (a stream cannot go back).
  init(streamingTo descriptor: Int32, path: String) {
    self.path = path
    self.created = false
    self.fd = descriptor
    self.fileID = nil
    self.direct = Locked(.unusable)
    self.streamed = Locked(StreamedBytes())
    self.lockHeld = Locked(nil)
  }

  /// Whether this is a stream target rather than a file.
  var isStream: Bool { streamed != nil }

  /// Lets another open of the file lock it while this object lives on: the download that
  /// owned it has ended, and whatever still holds a reference (a transport's thread that has
  /// not yet let go of a finished transfer) only closes the descriptors.
  func unlock() {
    guard !isStream else { return }  // never locked
    forgetLock()
    _ = SystemCall.retryingEINTR { flock(fd, LOCK_UN) }
  }

  /// Takes the file off `lockedHere`, once.
  private func forgetLock() {
    guard
      let id = lockHeld.withLock({ held in
        defer { held = nil }; return held
      })
    else { return }
    Self.lockedHere.withLock { _ = $0.remove(id) }
  }

  deinit {
    forgetLock()
    close(fd)
    switch direct.withLock({ $0 }) {
    case .open(let directFD), .refused(let directFD): close(directFD)
    case .notOpened, .unusable: break
    }
  }

  /// Whether aligned blocks may skip the page cache (else `writeDirect` writes through it).
  var writesDirectly: Bool {
    switch direct.withLock({ $0 }) {
    case .notOpened, .open: true
    case .refused, .unusable: false
    }
  }

  /// The direct descriptor, opened now for a write of `count` bytes if it is the first large
  /// enough; nil: through the page cache. The open happens outside the lock (a second writer
  /// at once closes its own).
  private func directDescriptor(writing count: Int) -> Int32? {
    switch direct.withLock({ $0 }) {
    case .open(let directFD): return directFD
    case .refused, .unusable: return nil
    case .notOpened:
      guard count >= Self.directMinimum, let fileID else { return nil }
      let opened = Self.openDirect(path, sameFileAs: fileID)
      let (chosen, extra): (Int32?, Int32?) = direct.withLock { state in
        switch state {
        case .open(let directFD): return (directFD, opened >= 0 ? opened : nil)
        case .refused, .unusable: return (nil, opened >= 0 ? opened : nil)
        case .notOpened:
          state = opened >= 0 ? .open(opened) : .unusable
          return (opened >= 0 ? opened : nil, nil)
        }
      }
      if let extra { close(extra) }
      return chosen
    }
  }

  /// The direct descriptor if a write opened it (reads never open it).
  private var openedDirectDescriptor: Int32? {
    if case .open(let directFD) = direct.withLock({ $0 }) { directFD } else { nil }
  }

  /// The file system refused a direct read or write: the page cache from now on.
  private func directRefused() {
    direct.withLock { state in
      if case .open(let directFD) = state { state = .refused(directFD) }
    }
  }

  /// Writes an aligned block: `bytes` starts at a multiple of `directAlignment` in memory,
  /// `offset` and the length are multiples of it. Goes through the page cache where direct
  /// I/O is not possible; the result in the file is the same.
  func writeDirect(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
    guard let base = bytes.baseAddress else { return }
    var done = 0
    while done < bytes.count, let directFD = directDescriptor(writing: bytes.count - done) {
      let count = SystemCall.retryingEINTR {
        pwrite(directFD, base + done, bytes.count - done, off_t(offset) + off_t(done))
      }
      if count < 0 {
        guard errno == EINVAL else { throw SystemError("pwrite", errno: errno) }
        directRefused()
        break
      }
      done += count
      // A short direct write leaves an unaligned rest: the page cache takes it.
      if count % Self.directAlignment != 0 { break }
    }
    if done < bytes.count {
      try write(UnsafeRawBufferPointer(rebasing: bytes[done...]), at: offset + Int64(done))
    }
  }

  /// Reads `[from, to)` in pieces and hands each to `body`, reading the next piece while
  /// `body` runs. `buffer` is split in two halves, each aligned to `directAlignment` and a
  /// multiple of it. Past the page cache where possible: reading back what direct writes wrote
  /// then costs no page-cache work. Returns where it stopped: `to`, or earlier if the file ends.
  func read(
    from: Int64, to: Int64, using buffer: UnsafeMutableRawBufferPointer,
    _ body: (UnsafeRawBufferPointer) -> Void
  ) throws(SystemError) -> Int64 {
    let half = buffer.count / 2 / Self.directAlignment * Self.directAlignment
    guard half > 0 else { return from }
    let halves = [
      UnsafeMutableRawBufferPointer(rebasing: buffer[0..<half]),
      UnsafeMutableRawBufferPointer(rebasing: buffer[half..<2 * half]),
    ]
    var position = from
    var current = 0
    var piece = try readPiece(at: position, to: to, into: halves[current])
    while let (start, end) = piece {
      // The next piece is read on another thread while this one is used.
      let next = start + Int64(end) < to ? start + Int64(end) : nil
      let ahead = DispatchGroup()
      let result = Locked<Result<(start: Int64, end: Int)?, SystemError>>(.success(nil))
      if let next {
        // Lent until `ahead.wait()` below.
        nonisolated(unsafe) let target = halves[1 - current]
        BlockingWork.run(in: ahead) { [self] in
          let read = Result { () throws(SystemError) in try readPiece(at: next, to: to, into: target) }
          result.withLock { $0 = read }
        }
      }
      let skip = Int(position - start)
      body(UnsafeRawBufferPointer(rebasing: halves[current][skip..<end]))
      position = start + Int64(end)
      ahead.wait()
      guard next != nil else { break }
      piece = try result.withLock { $0 }.get()
      current = 1 - current
    }
    return position
  }

  /// One piece of `read`: the aligned span around `position` (or `position` itself through
  /// the page cache) into `buffer`. Returns where the span starts and where the wanted bytes
  /// end in `buffer`, or nil at the end of the file.
  private func readPiece(
    at position: Int64, to: Int64, into buffer: UnsafeMutableRawBufferPointer
  ) throws(SystemError) -> (start: Int64, end: Int)? {
    guard let base = buffer.baseAddress else { return nil }
    let alignment = Int64(Self.directAlignment)
    while let directFD = openedDirectDescriptor {
      let start = position / alignment * alignment
      let wanted = min(buffer.count, Int((to - start + alignment - 1) / alignment * alignment))
      let count = SystemCall.retryingEINTR { pread(directFD, base, wanted, off_t(start)) }
      if count < 0 {
        guard errno == EINVAL else { throw SystemError("pread", errno: errno) }
        directRefused()
        continue
      }
      guard count > Int(position - start) else { return nil }
      return (start, min(Int(to - start), count))
    }
    let wanted = Int(min(Int64(buffer.count), to - position))
    let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), at: position)
    return count > 0 ? (position, count) : nil
  }

  /// Opens `path` again for direct I/O (not through a link), checking it is still the locked
  /// file (`id`, from its descriptor's `fstat`).
  private static func openDirect(_ path: String, sameFileAs id: FileID) -> Int32 {
    let direct = haul_open_direct(path)
    guard direct >= 0 else { return -1 }
    var opened = stat()
    guard fstat(direct, &opened) == 0,
      FileID(device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino)) == id
    else {
      close(direct)
      return -1
    }
    return direct
  }

  /// Writes all of `bytes` at `offset`.
  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
    guard let base = bytes.baseAddress else { return }
    if let streamed { return try append(bytes, at: offset, streamed) }
    var done = 0
    while done < bytes.count {
      done += try SystemCall.retryingEINTR("pwrite") {
        pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
      }
    }
  }

  /// A stream's write: only where the last one ended. On the download's I/O lane, the one
  /// writer; a descriptor left non-blocking (a shared terminal or pipe) is waited for.
  private func append(_ bytes: UnsafeRawBufferPointer, at offset: Int64, _ streamed: Locked<StreamedBytes>)
    throws(SystemError)
  {
    guard let base = bytes.baseAddress, offset == streamed.withLock({ $0.count }) else {
      throw SystemError("write", errno: ESPIPE)
    }
    var done = 0
    while done < bytes.count {
      let count = SystemCall.retryingEINTR { systemWrite(fd, base + done, bytes.count - done) }
      if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
        var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = SystemCall.retryingEINTR { poll(&ready, 1, -1) }
        continue
      }
      guard count >= 0 else { throw SystemError("write", errno: errno) }
      done += count
      streamed.withLock { $0.append(UnsafeRawBufferPointer(start: base + done - count, count: count)) }
    }
  }

  /// Reads up to `buffer.count` bytes at `offset`; returns how many (0 at the end).
  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) -> Int {
    guard let base = buffer.baseAddress else { return 0 }
    if let streamed {
      // Only the last bytes written are kept, for a resume's overlap check.
      guard let count = streamed.withLock({ $0.read(into: buffer, at: offset) }) else {
        throw SystemError("pread", errno: ESPIPE)
      }
      return count
    }
    return try SystemCall.retryingEINTR("pread") { pread(fd, base, buffer.count, off_t(offset)) }
  }

  /// Makes every completed write durable (data, and the size when it grew).
  func sync() throws(SystemError) {
    guard streamed == nil else { return }  // Nothing to keep: a stream is not resumed.
    _ = try SystemCall.retryingEINTR("fdatasync") { fdatasync(fd) }
  }

  /// Sets the file's access and modification times (`DownloadOptions.remoteTime`).
  func setTimes(unixTime: Int64) throws(SystemError) {
    guard streamed == nil else { return }  // Not a file of Haul's own.
    var times = [timespec(tv_sec: Int(unixTime), tv_nsec: 0), timespec(tv_sec: Int(unixTime), tv_nsec: 0)]
    _ = try SystemCall.retryingEINTR("futimens") { futimens(fd, &times) }
  }

  func truncate(to length: Int64) throws(SystemError) {
    if let streamed {
      guard length == streamed.withLock({ $0.count }) else { throw SystemError("ftruncate", errno: ESPIPE) }
      return
    }
    _ = try SystemCall.retryingEINTR("ftruncate") { ftruncate(fd, off_t(length)) }
  }

  func size() -> Int64 {
    if let streamed { return streamed.withLock { $0.count } }
    var info = stat()
    return fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
  }

  /// The file's size and times, for its seal (`FinishedFileRecord.seal`).
  func status() -> FileStatus? {
    var info = stat()
    return fstat(fd, &info) == 0 ? FileStatus(info) : nil
  }

  /// Stores `value` as an extended attribute; false where the file system has none.
  @discardableResult
  func setAttribute(_ name: String, _ value: [UInt8]) -> Bool {
    guard streamed == nil else { return false }
    return value.withUnsafeBytes { fsetxattr(fd, name, $0.baseAddress, $0.count, 0) == 0 }
  }
}

/// `write(2)`, which `PartFile.write(_:at:)` hides inside the class.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
  write(descriptor, bytes, count)
}
