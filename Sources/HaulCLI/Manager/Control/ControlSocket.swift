import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The Unix-domain socket beside a catalog (`CATALOG.sock`) on which the process that owns the
/// catalog takes control requests: made by `SafeFile`'s rules, mode 0600.
///
/// - It is bound inside a fresh private directory (0700) beside the catalog, set to 0600 there,
///   then renamed into place: nobody can connect to it before its mode is right, and a stale
///   socket a killed owner left is replaced in one step (only the catalog's owner makes one).
/// - Anything else at the name (a file, a link, another user's socket) is refused and left.
/// - Both ends check the other's user (`SO_PEERCRED`): only the user who owns the catalog talks.
/// - Paths longer than a socket address allows go through `/proc/self/fd/N/NAME`.
enum ControlSocket {
  /// A listening socket and what it is, for removing it again (only if it is still ours).
  struct Listener: Sendable {
    let descriptor: Int32
    let path: String
    let device: UInt64
    let inode: UInt64
  }

  /// Makes and listens on the control socket at `path`.
  /// - Throws: `.fileSystem` naming the path: something that is not our socket is there, or a
  ///   call failed.
  static func bindListener(at path: String) throws(HaulError) -> Listener {
    try refuseForeign(path)
    let directory = LocalDirectory.parent(of: path) ?? "."
    let name = String(path.split(separator: "/").last ?? "")
    var template = Array((directory + "/." + name + ".XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buffer in
      buffer.baseAddress.map { mkdtemp($0) != nil } ?? false
    }
    guard made else { throw failure("create a private directory beside", path, errno) }
    let temporaryDirectory = String(
      decoding: template.prefix { $0 != 0 }.map(UInt8.init(bitPattern:)), as: UTF8.self)
    let temporary = temporaryDirectory + "/s"
    defer { rmdir(temporaryDirectory) }
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw failure("create", path, errno) }
    do throws(HaulError) {
      try withAddress(temporary) { address, length throws(HaulError) in
        guard bind(descriptor, address, length) == 0 else { throw failure("bind", path, errno) }
      }
      guard chmod(temporary, 0o600) == 0 else { throw failure("set the mode of", path, errno) }
      guard listen(descriptor, 64) == 0 else { throw failure("listen on", path, errno) }
      // rename(2) replaces a stale socket at once and never follows a link at the name.
      try refuseForeign(path)
      guard rename(temporary, path) == 0 else { throw failure("put in place", path, errno) }
    } catch {
      unlink(temporary)
      close(descriptor)
      throw error
    }
    var info = stat()
    guard lstat(path, &info) == 0 else {
      close(descriptor)
      throw failure("look at", path, errno)
    }
    return Listener(
      descriptor: descriptor, path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
  }

  /// Removes the socket if the name still holds the one `listener` made.
  static func remove(_ listener: Listener) {
    var info = stat()
    if lstat(listener.path, &info) == 0, UInt64(info.st_dev) == listener.device,
      UInt64(info.st_ino) == listener.inode
    {
      unlink(listener.path)
    }
  }

  /// Connects to the control socket at `path`; nil when nobody listens there (no socket, or a
  /// stale one), or the socket or its listener is not the user's.
  static func dial(_ path: String) -> Int32? {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == geteuid() else {
      return nil
    }
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return nil }
    let connected: Bool? = try? withAddress(path) { address, length throws(HaulError) in
      SystemCall.retryingEINTR { connect(descriptor, address, length) } == 0
    }
    guard connected == true, peerUser(descriptor) == geteuid() else {
      close(descriptor)
      return nil
    }
    return descriptor
  }

  /// The user at the other end of a connected socket (`SO_PEERCRED`).
  static func peerUser(_ descriptor: Int32) -> uid_t? {
    #if os(Linux)
      // Linux's `struct ucred`: pid, uid, gid (Swift's Glibc module leaves it out).
      var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
      var length = socklen_t(MemoryLayout.size(ofValue: credentials))
      guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
        Int(length) == MemoryLayout.size(ofValue: credentials)
      else { return nil }
      return credentials.uid
    #else
      var user: uid_t = 0
      var group: gid_t = 0
      return getpeereid(descriptor, &user, &group) == 0 ? user : nil
    #endif
  }

  /// The process at the other end of a connected socket, where the system tells (Linux).
  static func peerProcess(_ descriptor: Int32) -> pid_t? {
    #if os(Linux)
      var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
      var length = socklen_t(MemoryLayout.size(ofValue: credentials))
      guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
        Int(length) == MemoryLayout.size(ofValue: credentials), credentials.pid > 0
      else { return nil }
      return credentials.pid
    #else
      return nil
    #endif
  }

  /// Refuses what is at `path` unless nothing is, or a socket of the user's (a stale one):
  /// an owner checks this before it opens the catalog, so that nothing runs when it cannot serve.
  static func refuseForeign(_ path: String) throws(HaulError) {
    var info = stat()
    guard lstat(path, &info) == 0 else {
      guard errno == ENOENT else { throw failure("look at", path, errno) }
      return
    }
    let type = info.st_mode & S_IFMT
    if type == S_IFSOCK, info.st_uid == geteuid() { return }
    let what = type == S_IFSOCK ? "a socket of uid \(info.st_uid)" : kind(of: type)
    throw HaulError(
      .fileSystem, "the control socket's name \(path) is taken by \(what), not haul's socket",
      hint: "haul left it as it is; remove it if you did not put it there, or choose another catalog file")
  }

  private static func kind(of type: mode_t) -> String {
    switch type {
    case S_IFREG: "a regular file"
    case S_IFLNK: "a symbolic link"
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO"
    case S_IFCHR, S_IFBLK: "a device"
    default: "an unknown kind of file"
    }
  }

  /// Calls `body` with a socket address for `path`: the path itself when it fits, else
  /// `/proc/self/fd/N/NAME` through a descriptor of its directory.
  private static func withAddress<Result>(
    _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(HaulError) -> Result
  ) throws(HaulError) -> Result {
    if let result = try UnixSocketAddress.with(path: path, body) { return result }
    // Too long (nil, `body` not called): the name through the directory's descriptor instead.
    let directory = LocalDirectory.parent(of: path) ?? "."
    let name = path.split(separator: "/").last.map(String.init) ?? path
    let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directoryDescriptor >= 0 else { throw failure("open the directory of", path, errno) }
    defer { close(directoryDescriptor) }
    let spelled = "/proc/self/fd/\(directoryDescriptor)/\(name)"
    guard let result = try UnixSocketAddress.with(path: spelled, body) else {
      throw HaulError(.fileSystem, "the control socket's name \(path) is too long for a socket")
    }
    return result
  }

  private static func failure(_ action: String, _ path: String, _ code: Int32) -> HaulError {
    HaulError(
      .fileSystem, "cannot \(action) the control socket \(path): \(String(cString: strerror(code)))",
      underlying: SystemError("socket", errno: code))
  }
}
