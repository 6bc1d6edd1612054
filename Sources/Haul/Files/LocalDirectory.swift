#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The directories a run writes into (`-d`, `dir=` in an input file, the daemon's `dir`), made
/// ready before any request: created with their parents when missing, as `mkdir -p` would.
package enum LocalDirectory {
  /// Makes sure `path` is a directory this process can write into, creating it and any missing
  /// parents.
  ///
  /// - Throws: `.fileSystem` when something else is in the way (`isos` is a file), a directory
  ///   cannot be made (permission, read-only file system) or written to, naming the path.
  package static func prepare(_ path: String) throws(HaulError) {
    let path = withoutTrailingSlashes(path)
    try create(path)
    try UserFiles.requireWritableDirectory(path)
  }

  /// `mkdir -p`: creates what is missing of `path`; what exists is left to the check that follows.
  private static func create(_ path: String) throws(HaulError) {
    var info = stat()
    guard stat(path, &info) != 0, errno == ENOENT else { return }
    if let parent = parent(of: path) { try create(parent) }
    // The mode is filtered by the umask, as mkdir(1) does.
    guard SystemCall.retryingEINTR({ mkdir(path, 0o777) }) != 0 else { return }
    let code = errno
    // Made by someone else a moment ago: the check that follows says whether it will do.
    guard code != EEXIST else { return }
    throw HaulError(
      .fileSystem, "cannot create the directory \(path): \(String(cString: strerror(code)))",
      underlying: SystemError("mkdir", errno: code))
  }

  /// `a/b` for `a/b/c`, `/` for `/a`; nil for a bare name, whose parent is the current directory.
  package static func parent(of path: String) -> String? {
    guard let slash = path.lastIndex(of: "/") else { return nil }
    if slash == path.startIndex { return path == "/" ? nil : "/" }
    return withoutTrailingSlashes(String(path[..<slash]))
  }

  package static func withoutTrailingSlashes(_ path: String) -> String {
    var path = Substring(path)
    while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
    return String(path)
  }
}
