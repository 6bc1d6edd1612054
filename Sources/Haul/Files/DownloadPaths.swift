import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The files of one download: the target, its `.part` data and its `.haul` state sidecar.
struct DownloadPaths: Equatable, Sendable {
  let target: String

  var part: String { target + ".part" }
  var state: String { target + ".haul" }
  /// The directory part of `target` ("." for a bare name, "/" at the root).
  var directory: String {
    let path = Self.trailingSlashesRemoved(target)
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : Self.trailingSlashesRemoved(String(path[..<slash]))
  }

  var name: String {
    let path = Self.trailingSlashesRemoved(target)
    return path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
  }

  init(target: String) { self.target = target }

  init(directory: String, name: String) {
    self.target =
      directory.isEmpty ? name : directory.hasSuffix("/") ? directory + name : directory + "/" + name
  }

  /// What one `lstat` of each of the download's files found when it started (nil: nothing
  /// there). The start decides on it and passes it along instead of looking again: in a
  /// directory of many files every lookup searches it. Never kept past that start.
  struct Seen {
    var target: stat?
    var part: stat?
    var state: stat?

    /// A directory at the target, or a link to one (a link there is only allowed when the
    /// target is to be replaced; it is followed only to say so).
    var targetIsDirectory: Bool {
      guard let target else { return false }
      let type = target.st_mode & S_IFMT
      return type == S_IFDIR || type == S_IFLNK && FileIO.isDirectory(targetPath)
    }
    fileprivate let targetPath: String
  }

  /// Looks at the three files once, and refuses, before anything is created, a `.part` or
  /// state file that Haul may not reuse (a link, a file with other names or another owner:
  /// `SafeFile.requireReusable`), and a symbolic link at the target unless the target is to be
  /// replaced (the final rename replaces the link itself, never what it points to). The opens
  /// check again on their descriptors; this look first keeps a refusal from leaving a new empty
  /// `.part` behind.
  func look(replacingTarget: Bool) throws(HaulError) -> Seen {
    var seen = Seen(targetPath: target)
    do {
      seen.part = try SafeFile.look(part)
      seen.state = try SafeFile.look(state)
    } catch {
      throw error.haulError
    }
    // A target that cannot be looked at counts as absent, as before: its open tells.
    var info = stat()
    guard lstat(target, &info) == 0 else { return seen }
    seen.target = info
    if !replacingTarget, info.st_mode & S_IFMT == S_IFLNK {
      throw HaulError(
        .fileSystem, LocalFileError(target, .symbolicLink).description,
        hint: LibraryWording.replaceLink)
    }
    return seen
  }

  private static func trailingSlashesRemoved(_ path: String) -> String {
    var path = Substring(path)
    while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
    return String(path)
  }

  /// The sidecar state files in `directory` (to find an interrupted download by its URL).
  static func stateFiles(in directory: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.filter { $0.hasSuffix(".haul") && $0.count > 5 }.sorted()
      .map { DownloadPaths(directory: directory, name: $0).target }
  }
}

extension String {
  var nonEmpty: String? { isEmpty ? nil : self }
}
