import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Targets that are not files: a `.file` destination that names one of the process's
/// descriptors (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`: that descriptor, whatever it is, as
/// bash and awk read these names), or that is a character device (`/dev/null`, a terminal), a
/// FIFO or a socket. The body is written to them in order, as it arrives, on one connection: no `.part`,
/// no state, no resume, and the target is never replaced (a rename over `/dev/null` would put
/// a regular file in its place).
extension DownloadRun {
  /// Where a stream target is, when the download has one.
  enum StreamTarget: Equatable {
    /// A descriptor of the process (standard output).
    case descriptor(Int32)
    /// A device, FIFO or socket at this path, to be opened for writing.
    case path(String)
  }

  /// The stream target of `destination` and `options`, nil when the download goes to a file.
  /// A symbolic link at the path is followed only when it is the user's or the system's
  /// (`/dev/stdout`, `/dev/fd/1`), and so is what it leads to: a FIFO another user planted in
  /// a shared directory is not written to, the target is refused as before.
  static func streamTarget(_ destination: DownloadDestination, _ options: DownloadOptions) throws(HaulError)
    -> StreamTarget?
  {
    guard case .file(let file) = destination else { return nil }
    let path = file.path
    if let descriptor = namedDescriptor(path) { return .descriptor(descriptor) }
    var link = stat()
    var info = stat()
    guard lstat(path, &link) == 0, stat(path, &info) == 0 else { return nil }
    let type = info.st_mode & S_IFMT
    guard type == S_IFCHR || type == S_IFIFO || type == S_IFSOCK || type == S_IFBLK else { return nil }
    let trusted: (stat) -> Bool = { $0.st_uid == 0 || $0.st_uid == geteuid() }
    let kind = LocalFileError.kind(ofMode: info.st_mode)
    guard trusted(link), trusted(info) else {
      throw HaulError(
        .fileSystem, "\(path) is \(kind) of another user; haul does not write a download into it",
        hint: "it was left as it is; choose another file name")
    }
    guard type != S_IFBLK else {
      throw HaulError(
        .fileSystem,
        "\(path) is a block device; haul writes to regular files, character devices and FIFOs only",
        hint: "it was left as it is; choose another file name")
    }
    return .path(path)
  }

  /// The open descriptor `path` names: 1 for `/dev/stdout`, 2 for `/dev/stderr`, N for `/dev/fd/N`.
  static func namedDescriptor(_ path: String) -> Int32? {
    let descriptor: Int32?
    switch path {
    case DownloadDestination.standardOutputPath: descriptor = STDOUT_FILENO
    case "/dev/stderr": descriptor = STDERR_FILENO
    default:
      let number = path.dropFirst("/dev/fd/".count)
      descriptor =
        path.hasPrefix("/dev/fd/") && (1...9).contains(number.count) && number.allSatisfy(\.isASCII)
        ? Int32(number) : nil
    }
    guard let descriptor, fcntl(descriptor, F_GETFD) >= 0 else { return nil }
    return descriptor
  }

  /// Whether the download streams (one connection then); a target that cannot be used says
  /// so when the run opens it.
  static func streams(_ destination: DownloadDestination, _ options: DownloadOptions) -> Bool {
    (try? streamTarget(destination, options)) != nil
  }

  /// Opens the stream target, if there is one: the run then starts with nothing held.
  func openStream() throws(HaulError) -> StartPoint? {
    guard let stream = try Self.streamTarget(destination, options) else { return nil }
    let descriptor: Int32
    let path: String
    switch stream {
    case .descriptor(let given):
      // A copy, so that the run closes its own and the caller's stays open.
      descriptor = fcntl(given, F_DUPFD_CLOEXEC, 0)
      path = destination.file?.path ?? "/dev/fd/\(given)"
    case .path(let given):
      // The user named it, and `streamTarget` checked what it is; a FIFO waits for its reader here.
      descriptor = SystemCall.retryingEINTR { openForWriting(given) }
      path = given
    }
    guard descriptor >= 0 else {
      let cause = SystemError("open", errno: errno)
      throw HaulError(.fileSystem, FileErrorText.describe(cause, path: path), underlying: cause)
    }
    var info = stat()
    if case .path = stream, fstat(descriptor, &info) != 0 || info.st_mode & S_IFMT == S_IFREG {
      // Replaced by a regular file since it was looked at: it is not written without `.part`.
      close(descriptor)
      throw HaulError(.fileSystem, "\(path) changed while haul opened it", hint: "try again")
    }
    let part = PartFile(streamingTo: descriptor, path: path)
    // No state is ever written for a stream: its lane is stopped before any work.
    let io = DownloadIO(part: part, statePath: "")
    io.stop()
    let target = OpenTarget(paths: DownloadPaths(target: path), part: part, io: io)
    let hasher = PrefixHasher(part: part, algorithms: hashAlgorithms(announced: nil))
    files.withLock {
      $0.paths = target.paths
      $0.target = target
      $0.hasher = hasher
    }
    return .stream
  }

}

extension DownloadDestination {
  /// The file of a `.file` destination.
  var file: URL? {
    if case .file(let url) = self { return url }
    return nil
  }
}

/// `open(2)` for writing, which `DownloadRun.open(_:)` hides inside the extension.
private func openForWriting(_ path: String) -> Int32 {
  open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)
}
