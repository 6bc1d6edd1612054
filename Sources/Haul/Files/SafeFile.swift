import CFileSystem

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An open file that Haul creates or reuses, opened by the rules below: the one place that
/// implements them, for the download's files (`.part`, the state file and its temporary copy)
/// and for every file the catalog and the daemon keep.
///
/// # Local files are untrusted input
/// In a directory that someone else can write to (a shared download folder, `/tmp`), a name
/// Haul is about to use may already hold a symbolic link or a hard link to one of the user's
/// files, a FIFO, or a file of another user's. Haul never writes through such a name:
///
/// 1. Every open uses `O_NOFOLLOW` (a symbolic link at the name is refused, never followed),
///    `O_CLOEXEC` (no descriptor leaks into a child process) and `O_NOCTTY`. An existing file
///    is first looked at with `lstat` and opened with `O_NONBLOCK`, so neither a device nor a
///    FIFO at the name is opened or can block the open.
/// 2. A new file is created with `O_CREAT | O_EXCL`: if anything appeared at the name in the
///    meantime, the create fails instead of opening it.
/// 3. An existing file is reused only if it is a regular file, has exactly one link, and is
///    owned by the effective user. Checked with `fstat` on the open descriptor, so the check and
///    the writes concern the same file.
/// 4. A file is replaced only by renaming a complete, synced temporary file over it
///    (`rename(2)` replaces the name and never follows a link there). The temporary file is
///    unnamed until that moment where the system has unnamed files (Linux's `O_TMPFILE`), else
///    it is created by rule 2 under a name nobody can guess (12 characters from the system's
///    CSPRNG); a failed write removes it.
/// 5. A refusal is a `LocalFileError` whose `haulError` has category `.fileSystem` (exit 3) and
///    names the file and the reason. The file, and whatever it points to, is left as it was.
///
/// Lock files: `FileLock`. Files nobody else may replace or plant beside (the daemon's secret,
/// the catalog) belong in a directory of their own: `makePrivateDirectory`. Paths the user names
/// (the download directory, an input list) are the user's own and are followed like any path
/// typed at a shell: see `UserFiles`.
///
///     let file = try SafeFile.openOrCreate(path, mode: 0o600)
///     guard try file.tryLock() else { … another process has it … }
///     let descriptor = file.takeDescriptor()  // now the caller's to close
package struct SafeFile: ~Copyable {
  /// The open descriptor, closed when this value ends unless taken with `takeDescriptor()`.
  package let descriptor: Int32
  /// Whether this open created the file.
  package let created: Bool

  package enum Access: Sendable {
    case readOnly, readWrite

    var flags: Int32 { self == .readOnly ? O_RDONLY : O_RDWR }
  }

  /// The flags of every open (rule 1).
  static let openFlags = O_NOFOLLOW | O_CLOEXEC | O_NOCTTY

  private init(descriptor: Int32, created: Bool) {
    self.descriptor = descriptor
    self.created = created
  }

  deinit { close(descriptor) }

  /// Hands the descriptor over: the caller closes it.
  package consuming func takeDescriptor() -> Int32 {
    let descriptor = self.descriptor
    discard self
    return descriptor
  }

  // MARK: - Opening and creating

  /// Opens an existing file to reuse it (rules 1 and 3).
  ///
  /// - Throws: a refusal, or `.system` with ENOENT when nothing is at `path`.
  package static func openExisting(_ path: String, access: Access = .readWrite) throws(LocalFileError)
    -> SafeFile
  {
    try openExisting(path, access: access, looked: false)
  }

  /// `looked`: `check` allowed what is at `path` a moment ago; not looked at again (the
  /// descriptor still is).
  private static func openExisting(_ path: String, access: Access, looked: Bool) throws(LocalFileError)
    -> SafeFile
  {
    if !looked, try !check(path) { throw LocalFileError(path, call: "open", errno: ENOENT) }
    let descriptor = SystemCall.retryingEINTR { open(path, access.flags | openFlags | O_NONBLOCK) }
    guard descriptor >= 0 else { throw failure(path, call: "open", errno: errno) }
    let file = SafeFile(descriptor: descriptor, created: false)
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { throw LocalFileError(path, call: "fstat", errno: errno) }
    guard try reusableOrGone(info, path) != nil else {
      throw LocalFileError(path, call: "open", errno: ENOENT)
    }
    let flags = fcntl(descriptor, F_GETFL)
    guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
      throw LocalFileError(path, call: "fcntl", errno: errno)
    }
    return file
  }

  /// Creates a new file (rules 1 and 2); fails with EEXIST if anything is at `path`, and names a
  /// symbolic link there as such.
  package static func createExclusive(
    _ path: String, access: Access = .readWrite, mode: mode_t = 0o644
  ) throws(LocalFileError) -> SafeFile {
    let descriptor = SystemCall.retryingEINTR {
      open(path, access.flags | O_CREAT | O_EXCL | openFlags, mode)
    }
    guard descriptor >= 0 else { throw failure(path, call: "open", errno: errno) }
    return SafeFile(descriptor: descriptor, created: true)
  }

  /// What a look at a name a moment before an open found (`check`), so that the open starts
  /// with the step that fits instead of looking again. Either way the rules hold: a reused file
  /// is checked on its descriptor (rule 3), a new one created exclusively (rule 2).
  package enum Seen: Sendable {
    case unknown
    /// Nothing was there: create first.
    case absent
    /// A file `check` allowed: open it.
    case reusable
  }

  /// Opens `path` to reuse it if it exists, else creates it: the `.part` file's open.
  package static func openOrCreate(
    _ path: String, access: Access = .readWrite, mode: mode_t = 0o644, seen: Seen = .unknown
  ) throws(LocalFileError) -> SafeFile {
    // A name that keeps appearing and vanishing between the two opens is someone's game: a few
    // rounds, then the last error.
    var last = LocalFileError(path, call: "open", errno: EEXIST)
    for round in 0..<4 {
      do {
        if round > 0 || seen != .absent {
          return try openExisting(path, access: access, looked: round == 0 && seen == .reusable)
        }
      } catch {
        guard error.errno == ENOENT else { throw error }
      }
      do {
        return try createExclusive(path, access: access, mode: mode)
      } catch {
        guard error.errno == EEXIST else { throw error }
        last = error
      }
    }
    throw last
  }

  /// Whether something is at `path` that Haul may reuse (rules 1 and 3): false when nothing is
  /// there, a refusal when something else is. A look before creating anything; the open checks
  /// again, on the descriptor.
  package static func check(_ path: String) throws(LocalFileError) -> Bool {
    try look(path) != nil
  }

  /// `check`, with what `lstat` found: nil when nothing is there.
  static func look(_ path: String) throws(LocalFileError) -> stat? {
    var info = stat()
    guard lstat(path, &info) == 0 else {
      if errno == ENOENT { return nil }
      throw LocalFileError(path, call: "lstat", errno: errno)
    }
    return try reusableOrGone(info, path)
  }

  /// Rule 3 for what `lstat` or `fstat` found, or nil for a file without a name left: it was
  /// removed while it was looked at (SQLite drops its `-wal` as its last connection closes), so
  /// it counts as absent. No other file's name can lead to it.
  static func reusableOrGone(_ info: stat, _ path: String) throws(LocalFileError) -> stat? {
    if info.st_nlink == 0 { return nil }
    try requireReusable(info, path)
    return info
  }

  /// Rule 3: a regular file with one link, owned by the effective user.
  static func requireReusable(_ info: stat, _ path: String) throws(LocalFileError) {
    let type = info.st_mode & S_IFMT
    guard type != S_IFLNK else { throw LocalFileError(path, .symbolicLink) }
    guard type == S_IFREG else {
      throw LocalFileError(path, .notRegular(LocalFileError.kind(ofMode: info.st_mode)))
    }
    guard info.st_nlink == 1 else { throw LocalFileError(path, .hardLinks(Int(info.st_nlink))) }
    guard info.st_uid == geteuid() else { throw LocalFileError(path, .foreignOwner(uid: info.st_uid)) }
  }

  /// A failed open, with a symbolic link at the name (ELOOP under O_NOFOLLOW, EEXIST under
  /// O_EXCL) named as such.
  static func failure(_ path: String, call: String, errno code: Int32) -> LocalFileError {
    var info = stat()
    if code == ELOOP || code == EEXIST || code == EMLINK, lstat(path, &info) == 0,
      info.st_mode & S_IFMT == S_IFLNK
    {
      return LocalFileError(path, .symbolicLink)
    }
    return LocalFileError(path, call: call, errno: code)
  }

  // MARK: - Using the file

  /// Takes an exclusive lock between processes (`flock`) without waiting: false when another
  /// process, or another open of the same file, holds it. Released when the descriptor closes.
  package func tryLock() throws(SystemError) -> Bool {
    let result = SystemCall.retryingEINTR { flock(descriptor, LOCK_EX | LOCK_NB) }
    guard result != 0 else { return true }
    if errno == EWOULDBLOCK { return false }
    throw SystemError("flock", errno: errno)
  }

  /// Writes all of `bytes` at the current offset.
  package func writeAll(_ bytes: [UInt8]) throws(SystemError) {
    try Self.writeAll(descriptor, bytes)
  }

  /// Makes the file's data and size durable.
  package func sync() throws(SystemError) {
    _ = try SystemCall.retryingEINTR("fsync") { fsync(descriptor) }
  }

  /// The file's status (`fstat`), e.g. to check its mode before trusting a secret in it.
  package func status() throws(SystemError) -> stat {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { throw SystemError("fstat", errno: errno) }
    return info
  }

  /// Everything left to read, at most `limit` bytes.
  package func readAll(limit: Int) throws(LocalFileError) -> [UInt8] {
    try UserFiles.readAll(descriptor: descriptor, limit: limit, name: "the file")
  }

  static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) throws(SystemError) {
    var written = 0
    while written < bytes.count {
      let count = bytes.withUnsafeBytes { buffer in
        SystemCall.retryingEINTR {
          write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
        }
      }
      guard count >= 0 else { throw SystemError("write", errno: errno) }
      written += count
    }
  }

  // MARK: - Whole small files

  /// The contents of a small file Haul keeps (a state file, a secret), opened by rules 1 and 3.
  ///
  /// - Throws: a refusal, `.tooLarge` past `limit`, `.system` (ENOENT when it is missing).
  package static func contents(of path: String, limit: Int) throws(LocalFileError) -> [UInt8] {
    let file = try openExisting(path, access: .readOnly)
    do {
      return try UserFiles.readAll(descriptor: file.descriptor, limit: limit, name: path)
    } catch {
      throw LocalFileError(path, error.reason)
    }
  }

  // MARK: - Directories of its own

  /// Makes sure `path` is a directory that only the effective user can write to, creating it
  /// (mode 0700, parents not included) if missing: the place for files that nobody else may
  /// plant or replace (the daemon's secret, the catalog). An existing one is refused when it is a
  /// symbolic link, not a directory, another user's, or writable by its group or by others.
  ///
  ///     try SafeFile.makePrivateDirectory(stateHome + "/haul")
  package static func makePrivateDirectory(_ path: String) throws(LocalFileError) {
    if mkdir(path, 0o700) == 0 { return }
    guard errno == EEXIST else { throw LocalFileError(path, call: "mkdir", errno: errno) }
    var info = stat()
    guard lstat(path, &info) == 0 else { throw LocalFileError(path, call: "lstat", errno: errno) }
    let type = info.st_mode & S_IFMT
    guard type != S_IFLNK else { throw LocalFileError(path, .symbolicLink) }
    guard type == S_IFDIR else {
      throw LocalFileError(path, .notDirectory(LocalFileError.kind(ofMode: info.st_mode)))
    }
    guard info.st_uid == geteuid() else { throw LocalFileError(path, .foreignOwner(uid: info.st_uid)) }
    guard info.st_mode & 0o022 == 0 else {
      throw LocalFileError(path, .writableByOthers(mode: info.st_mode & 0o7777))
    }
  }
}
