import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Two downloads of one run must not write the same file (`/small.bin` and `/slow/small.bin`
/// into one directory). Where the names are known before any request — `out=`, else the URL's
/// last path segment — the run either stops before the first request, naming the URLs and the
/// file, or (`--auto-rename`, as aria2's auto-file-renaming) numbers the later ones:
/// `small.1.bin`, `small.2.bin`, … in the order the URLs were given, so that the same command
/// finds the same files again when it is run again to resume.
///
/// A URL's name is only what a directory download falls back on: a numbered one replaces it
/// (`DownloadOptions.fallbackFileName`), so a name the server gives (`download?id=1` and
/// `download?id=2` answered with `Content-Disposition`) still wins. A name that only the server
/// tells is not known here; two such downloads that pick one name still meet at the file's
/// lock and the second one fails.
enum NameCollisions {
  /// A download given a numbered name.
  struct Renamed: Equatable {
    let source: String
    /// The file as shown to the user (`isos/small.1.bin`).
    let file: String
    /// The URL that keeps the original name.
    let keptBy: String
    /// A directory download: the number replaces the URL's name, not one the server gives.
    var unlessServerNames = false

    /// What the user is told: `saving URL as isos/small.1.bin (--auto-rename: URL has the name)`.
    var note: String {
      "saving \(source) as \(file)" + (unlessServerNames ? " unless its server names the file" : "")
        + " (--auto-rename: \(keptBy) has the name)"
    }
  }

  /// The file a job writes when it is known before any request.
  struct ExpectedFile: Equatable {
    /// The directory as the user spelled it.
    let directory: String
    let name: String
    /// The absolute path with `.`, `..` and symbolic links of existing directories resolved.
    let key: String

    /// `isos/small.bin`, or `small.bin` in the current directory.
    var shown: String {
      directory == "." ? name : LocalDirectory.withoutTrailingSlashes(directory) + "/" + name
    }
  }

  /// The jobs, unchanged or with numbered names; throws `.invalidInput` when names collide
  /// and `autoRename` is off.
  static func resolve(
    _ jobs: [DownloadJob], autoRename: Bool
  ) throws(HaulError) -> (jobs: [DownloadJob], renamed: [Renamed]) {
    var keys = DirectoryKeys()
    let expected = jobs.map { expectedFile($0, keys: &keys) }
    var owner: [String: Int] = [:]
    var clashes: [(first: Int, later: Int)] = []
    for (index, file) in expected.enumerated() {
      guard let file else { continue }
      if let first = owner[file.key] {
        clashes.append((first, index))
      } else {
        owner[file.key] = index
      }
    }
    guard !clashes.isEmpty else { return (jobs, []) }
    guard autoRename else { throw refusal(clashes, jobs: jobs, expected: expected) }

    var result = jobs
    var renamed: [Renamed] = []
    // Every name some job asked for stays free for it; numbers skip them too.
    var taken = Set(owner.keys)
    for (first, later) in clashes {
      guard let file = expected[later] else { continue }
      var number = 1
      var candidate = numbered(file.name, number)
      while taken.contains(keys.key(directory: file.directory, name: candidate)) {
        number += 1
        candidate = numbered(file.name, number)
      }
      taken.insert(keys.key(directory: file.directory, name: candidate))
      let job = jobs[later]
      // A directory download keeps its directory: the number replaces only the URL's name.
      var destination = job.destination
      var options = job.options
      if destination.isDirectory {
        options.fallbackFileName = candidate
      } else {
        destination = .file(
          URL(fileURLWithPath: LocalDirectory.withoutTrailingSlashes(file.directory) + "/" + candidate))
      }
      result[later] = DownloadJob(
        source: job.source, destination: destination, options: options, directory: job.directory)
      let shown = ExpectedFile(directory: file.directory, name: candidate, key: "").shown
      renamed.append(
        Renamed(
          source: job.source, file: shown, keptBy: jobs[first].source,
          unlessServerNames: job.destination.isDirectory))
    }
    return (result, renamed)
  }

  /// `haul: 2 URLs would be saved as isos/small.bin:` and the URLs, for each clash.
  private static func refusal(
    _ clashes: [(first: Int, later: Int)], jobs: [DownloadJob], expected: [ExpectedFile?]
  ) -> HaulError {
    var groups: [(first: Int, members: [Int])] = []
    for (first, later) in clashes {
      if let at = groups.firstIndex(where: { $0.first == first }) {
        groups[at].members.append(later)
      } else {
        groups.append((first, [first, later]))
      }
    }
    let shownGroups = 5
    var lines: [String] = []
    for group in groups.prefix(shownGroups) {
      let file = expected[group.first]?.shown ?? ""
      lines.append("\(group.members.count) URLs would be saved as \(file):")
      lines += group.members.map { "  " + jobs[$0].source }
    }
    if groups.count > shownGroups {
      lines.append("and \(groups.count - shownGroups) more files wanted twice")
    }
    let example = expected[groups[0].first].map { numbered($0.name, 1) } ?? ""
    // Where a URL's name clashes, its server may still name the file otherwise.
    let guessed = clashes.contains { jobs[$0.later].destination.isDirectory }
    return HaulError(
      .invalidInput, lines.joined(separator: "\n"),
      hint: "give each its own name (out= in an input file), or --auto-rename to number the later ones ("
        + example + (guessed ? "; a name the server gives still wins" : "") + ")")
  }

  /// Where a job's file will be when nothing but the command and the URL decide it.
  static func expectedFile(_ job: DownloadJob, keys: inout DirectoryKeys) -> ExpectedFile? {
    guard let name = expectedName(source: job.source, destination: job.destination) else { return nil }
    return ExpectedFile(
      directory: job.directory, name: name, key: keys.key(directory: job.directory, name: name))
  }

  /// The file name `-o`/`out=` gives, else the URL's last path segment (as the library
  /// chooses it when the server suggests none); nil for a URL that is not valid.
  static func expectedName(source: String, destination: DownloadDestination) -> String? {
    switch destination {
    case .file(let url):
      return String(url.path.split(separator: "/").last ?? "")
    case .directory:
      // An invalid URL fails by itself, with its own message.
      guard let url = try? RequestURL.normalize(source) else { return nil }
      return FileNameSanitizer.directoryName(forURL: url)
    }
  }

  /// `small.bin` → `small.1.bin`, `archive.tar.gz` → `archive.tar.1.gz`, `README` → `README.1`,
  /// `.bashrc` → `.bashrc.1`; the stem is shortened when the name would grow too long.
  static func numbered(_ name: String, _ number: Int) -> String {
    var stem = Substring(name)
    var suffix = ""
    if let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex {
      stem = name[..<dot]
      suffix = String(name[dot...])
    }
    let tag = "." + String(number)
    while stem.utf8.count + tag.utf8.count + suffix.utf8.count > FileNameSanitizer.maximumBytes, !stem.isEmpty
    {
      stem = stem.dropLast()
    }
    return stem + tag + suffix
  }

  /// Path keys: `name` in `directory` made absolute, `.` and `..` removed, and the longest
  /// existing ancestor's symbolic links resolved (the rest does not exist yet). Each directory
  /// is resolved once: a run's URLs mostly share one, and resolving it costs a system call per
  /// path component.
  struct DirectoryKeys {
    private var resolved: [String: String] = [:]

    mutating func key(directory: String, name: String) -> String {
      if let known = resolved[directory] { return known + "/" + name }
      let resolving = NameCollisions.directoryKey(directory)
      resolved[directory] = resolving
      return resolving + "/" + name
    }
  }

  /// The directory part of a key: "" for the root, else an absolute path without a trailing
  /// slash.
  private static func directoryKey(_ directory: String) -> String {
    var components: [Substring] = []
    let absolute = directory.hasPrefix("/") ? directory : currentDirectory() + "/" + directory
    for component in absolute.split(separator: "/") {
      switch component {
      case ".": continue
      case "..": _ = components.popLast()
      default: components.append(component)
      }
    }
    var missing: [Substring] = []
    while true {
      let path = "/" + components.joined(separator: "/")
      if let resolved = realPath(path) {
        let base = resolved == "/" ? "" : resolved
        return ([base] + missing.reversed().map(String.init)).joined(separator: "/")
      }
      guard let last = components.popLast() else {
        return ([""] + missing.reversed().map(String.init)).joined(separator: "/")
      }
      missing.append(last)
    }
  }

  private static func currentDirectory() -> String {
    guard let path = getcwd(nil, 0) else { return "." }
    defer { free(path) }
    return String(cString: path)
  }

  private static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}

extension DownloadDestination {
  /// A directory destination: the file's name comes from the response.
  fileprivate var isDirectory: Bool {
    if case .directory = self { true } else { false }
  }
}
