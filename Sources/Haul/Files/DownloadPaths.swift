import Foundation

/// The files of one download: the target, its `.part` data and its `.haul` state sidecar.
struct DownloadPaths: Equatable, Sendable {
  let target: String

  var part: String { target + ".part" }
  var state: String { target + ".haul" }
  var directory: String { (target as NSString).deletingLastPathComponent.nonEmpty ?? "." }
  var name: String { (target as NSString).lastPathComponent }

  init(target: String) { self.target = target }

  init(directory: String, name: String) {
    self.target = (directory as NSString).appendingPathComponent(name)
  }

  /// The sidecar state files in `directory` (to find an interrupted download by its URL).
  static func stateFiles(in directory: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.filter { $0.hasSuffix(".haul") && $0.count > 5 }.sorted()
      .map { (directory as NSString).appendingPathComponent($0) }
  }
}

extension String {
  var nonEmpty: String? { isEmpty ? nil : self }
}

extension FileNameSanitizer {
  /// The name a URL suggests: its last path segment, decoded and sanitized (query and fragment ignored).
  static func name(fromURL url: String) -> String? {
    var rest = Substring(url)
    if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
    guard let slash = rest.firstIndex(of: "/") else { return nil }
    var path = rest[slash...]
    if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
    return name(fromURLPath: String(path))
  }
}
