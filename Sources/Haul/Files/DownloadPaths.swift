import Dispatch
import FoundationEssentials

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

extension FileNameSanitizer {
  /// The name a URL suggests: its last path segment, decoded and sanitized (query and fragment ignored).
  static func name(fromURL url: String) -> String? {
    var rest = Substring(url)
    if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
    guard let slash = rest.firstIndex(of: "/") else { return nil }
    var path = rest[slash...]
    if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
    return name(fromURLPath: String(path))
  }
}
