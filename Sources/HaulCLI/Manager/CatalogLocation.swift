import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where the subcommands' catalog is: `--catalog FILE`, else `$XDG_DATA_HOME/haul/catalog.sqlite`,
/// else `~/.local/share/haul/catalog.sqlite` (the XDG base directory rules: a relative
/// `XDG_DATA_HOME` is ignored).
struct CatalogLocation: Equatable {
  /// The catalog file, absolute.
  let path: String
  /// The default location (its directories are made on first use, private to the user).
  let isDefault: Bool

  init(path: String, isDefault: Bool) {
    self.path = path
    self.isDefault = isDefault
  }

  /// - Throws: `.invalidInput` when no home directory is known for the default location.
  static func resolve(_ given: String?, environment: [String: String]) throws(HaulError) -> CatalogLocation {
    if let given {
      return CatalogLocation(path: URL(fileURLWithPath: given).standardizedFileURL.path, isDefault: false)
    }
    return CatalogLocation(path: try dataHome(environment) + "/haul/catalog.sqlite", isDefault: true)
  }

  /// `$XDG_DATA_HOME`, else `$HOME/.local/share`, else the home directory of the user's account.
  static func dataHome(_ environment: [String: String]) throws(HaulError) -> String {
    if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
      return LocalDirectory.withoutTrailingSlashes(data)
    }
    var home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
    if home == nil, let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
      home = String(cString: directory)
    }
    guard let home, home.hasPrefix("/") else {
      throw HaulError(
        .invalidInput, "no home directory is known for the default catalog",
        hint: "set HOME or XDG_DATA_HOME, or give --catalog FILE")
    }
    return LocalDirectory.withoutTrailingSlashes(home) + "/.local/share"
  }

  /// Whether something is at the catalog's name (a symbolic link counts, dangling or not: opening
  /// it is refused with its own message, never taken for a missing catalog).
  var exists: Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  /// For the subcommands that change or list a catalog but do not make one (`pause`, `resume`,
  /// `rm`, `ls`): a mistyped `--catalog` is said, not made into a new empty catalog.
  ///
  /// - Throws: `.fileSystem` when nothing is at the catalog's name.
  func requireExisting() throws(HaulError) {
    var info = stat()
    guard lstat(path, &info) != 0 else { return }
    // Other failures (no permission) are left to the open, which names them.
    guard errno == ENOENT || errno == ENOTDIR else { return }
    throw HaulError(
      .fileSystem, "no catalog at \(shown)",
      hint: isDefault
        ? "haul add URL makes it" : "check the path; haul add --catalog \(shown) URL makes a catalog there")
  }

  /// The socket beside the catalog through which its owner takes requests.
  var controlSocket: String { path + ".sock" }

  /// The catalog's name for messages.
  var shown: String { ProgressLine.sanitize(path) }

  /// Makes the default catalog's directories when missing: the data home with its parents (mode
  /// 0700, as the XDG rules ask) and `haul` in it, private to the user (`SafeFile`'s rules). A
  /// catalog the user named needs its directory to exist.
  func prepareDirectory() throws(HaulError) {
    guard isDefault else { return }
    let directory = LocalDirectory.parent(of: path) ?? "."
    if let dataHome = LocalDirectory.parent(of: directory) { try Self.makeParents(dataHome) }
    do {
      try SafeFile.makePrivateDirectory(directory)
    } catch {
      throw error.haulError
    }
  }

  /// `mkdir -p -m 0700` for what is missing of `path`.
  private static func makeParents(_ path: String) throws(HaulError) {
    var info = stat()
    guard stat(path, &info) != 0, errno == ENOENT else { return }
    if let parent = LocalDirectory.parent(of: path) { try makeParents(parent) }
    guard SystemCall.retryingEINTR({ mkdir(path, 0o700) }) != 0, errno != EEXIST else { return }
    let code = errno
    throw HaulError(
      .fileSystem, "cannot create the directory \(path) for the catalog: \(String(cString: strerror(code)))",
      underlying: SystemError("mkdir", errno: code))
  }
}
