#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Why a local file was not used: Haul refused it (`isRefusal`: a link, a file with other
/// names or another owner, not a regular file; see `SafeFile`), or a call on it failed.
///
///     do { let file = try SafeFile.openExisting(path) } catch { throw error.haulError }
package struct LocalFileError: Error, Sendable, Equatable, CustomStringConvertible {
  package enum Reason: Sendable, Equatable {
    /// A symbolic link is at the name.
    case symbolicLink
    /// Something other than a regular file is at the name: "a directory", "a FIFO", …
    case notRegular(String)
    /// A directory was expected; this is what is there instead.
    case notDirectory(String)
    /// A private directory that its group or others can write to (its permission bits).
    case writableByOthers(mode: mode_t)
    /// The file has this many names: writing it would write another file too.
    case hardLinks(Int)
    /// The file belongs to this user, not to the one running Haul.
    case foreignOwner(uid: UInt32)
    /// The file holds more than the reader accepts.
    case tooLarge(limit: Int)
    /// A system call failed (missing file, permission, disk full, …).
    case system(SystemError)
  }

  /// The file as the user knows it (a state file's, not its temporary copy's).
  package let path: String
  package let reason: Reason

  package init(_ path: String, _ reason: Reason) {
    self.path = path
    self.reason = reason
  }

  package init(_ path: String, call: String, errno code: Int32) {
    self.init(path, .system(SystemError(call, errno: code)))
  }

  /// The errno of a failed call; nil for a refusal.
  package var errno: Int32? {
    if case .system(let error) = reason { return error.errno }
    return nil
  }

  /// Whether Haul refused the file (rather than failed to use it).
  package var isRefusal: Bool {
    switch reason {
    case .symbolicLink, .notRegular, .notDirectory, .writableByOthers, .hardLinks, .foreignOwner: true
    case .tooLarge, .system: false
    }
  }

  package var description: String {
    switch reason {
    case .symbolicLink: "\(path) is a symbolic link; haul does not write through links"
    case .notRegular(let kind): "\(path) is \(kind), not a regular file; haul writes only regular files"
    case .notDirectory(let kind): "\(path) is \(kind), not a directory"
    case .writableByOthers(let mode):
      "\(path) can be written by other users (mode \(String(mode, radix: 8))); haul keeps private files only "
        + "in a directory nobody else can write to"
    case .hardLinks(let count):
      "\(path) has \(count) hard links; haul does not write into a file that has other names"
    case .foreignOwner(let uid):
      "\(path) is owned by uid \(uid), not by uid \(geteuid()) that runs haul; haul reuses only its own files"
    case .tooLarge(let limit): "\(path) is larger than \(limit) bytes"
    case .system(let error): FileErrorText.describe(error, path: path)
    }
  }

  /// The error for the user: category `.fileSystem` (exit 3), this message, and for a refusal a
  /// hint that the file was left alone.
  package var haulError: HaulError {
    let hint =
      isRefusal
      ? "it was left as it is, and nothing was written to it; remove it if you did not put it there "
        + "(anyone who can write to its directory could have), or choose another file name"
      : nil
    if case .system(let cause) = reason {
      return HaulError(.fileSystem, description, hint: hint, underlying: cause)
    }
    return HaulError(.fileSystem, description, hint: hint, underlying: self)
  }

  /// What the file type bits of `mode` name, for messages.
  static func kind(ofMode mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFREG: "a regular file"
    case S_IFDIR: "a directory"
    case S_IFLNK: "a symbolic link"
    case S_IFIFO: "a FIFO"
    case S_IFSOCK: "a socket"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    default: "an unknown kind of file"
    }
  }
}
