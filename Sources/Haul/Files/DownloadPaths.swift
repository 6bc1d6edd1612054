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

  /// Refuses, before anything is created, a `.part` or state file that Haul may not reuse (a
  /// link, a file with other names or another owner: `SafeFile.check`), and a symbolic link at
  /// the target unless the target is to be replaced (the final rename replaces the link itself,
  /// never what it points to). The opens check again on their descriptors; this look first keeps
  /// a refusal from leaving a new empty `.part` behind.
  func refuseUnsafeFiles(replacingTarget: Bool) throws(HaulError) {
    do {
      _ = try SafeFile.check(part)
      _ = try SafeFile.check(state)
    } catch {
      throw error.haulError
    }
    var info = stat()
    if !replacingTarget, lstat(target, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
      throw HaulError(
        .fileSystem, LocalFileError(target, .symbolicLink).description,
        hint: LibraryWording.replaceLink)
    }
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
