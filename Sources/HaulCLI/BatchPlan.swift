import FoundationEssentials
import Haul
import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One download of a batch: where from, where to and how, decided before any download starts.
struct DownloadJob: Sendable {
  /// The URL as given (JSON's `source`, and messages until the file's name is known).
  let source: String
  let destination: DownloadDestination
  let options: DownloadOptions
  /// The directory the file goes into, as the user spelled it (`isos`, `isos/debian`).
  let directory: String
}

/// Everything a batch does, worked out and checked before the first request: the command
/// line's URLs, then the input file's with their option lines; the directories they write into
/// exist afterwards.
enum BatchPlan {
  /// The jobs, those given numbered names (`--auto-rename`), and notes for the user (a URL
  /// listed twice, an input file that lists none: then there are no jobs).
  ///
  /// - Throws: `.fileSystem` when the input file cannot be read or a directory cannot be made;
  ///   `.invalidInput` for a URL that is not one a download can take (the command line's too),
  ///   for a mistake in the input file (naming its line), or when two URLs would write one file
  ///   (without `--auto-rename`).
  static func make(
    _ options: CommandLineOptions,
  ) throws(HaulError) -> (jobs: [DownloadJob], renamed: [NameCollisions.Renamed], notes: [String]) {
    let (listed, notes) = withoutRepeats(try entries(options), options: options)
    let resolved = try NameCollisions.resolve(jobs(options, entries: listed), autoRename: options.autoRename)
    for directory in directories(of: resolved.jobs) { try LocalDirectory.prepare(directory) }
    return (resolved.jobs, resolved.renamed, notes)
  }

  /// The entries without those that repeat an earlier one (the same URL with the same options
  /// of its own): one download, as aria2c makes of a URL given twice; and the notes that say
  /// so, or that the input file lists no URL (as aria2c and wget, nothing to do is no error).
  static func withoutRepeats(
    _ entries: [InputFile.Entry], options: CommandLineOptions
  ) -> (entries: [InputFile.Entry], notes: [String]) {
    guard !entries.isEmpty else {
      let name = options.inputFile.map { $0 == "-" ? "standard input" : $0 } ?? "the command line"
      return ([], ["\(name) lists no URL: nothing to do"])
    }
    var kept: [InputFile.Entry] = []
    var notes: [String] = []
    // By URL, the options each kept entry of it has: linear in the entries, not quadratic (an
    // input file may list a million URLs).
    var keptOptions: [String: [InputFile.LineOptions]] = [:]
    var noted: Set<String> = []
    for entry in entries {
      guard keptOptions[entry.url, default: []].contains(entry.options) else {
        keptOptions[entry.url, default: []].append(entry.options)
        kept.append(entry)
        continue
      }
      if noted.insert(entry.url).inserted {
        notes.append("\(entry.url) is listed more than once with the same options; it is downloaded once")
      }
    }
    return (kept, notes)
  }

  /// The longest input file read (a million URLs of 64 bytes fit).
  static let inputLimit = 64 << 20

  /// The command line's URLs (without options of their own) followed by the input file's.
  static func entries(
    _ options: CommandLineOptions,
    readStandardInput: () throws(LocalFileError) -> [UInt8] = {
      try UserFiles.readAll(descriptor: STDIN_FILENO, limit: inputLimit, name: "standard input")
    }
  ) throws(HaulError) -> [InputFile.Entry] {
    try checkURLs(options.urls)
    let given = options.urls.map { InputFile.Entry(url: $0, line: 0) }
    guard let path = options.inputFile else { return given }
    let data: [UInt8]
    do throws(LocalFileError) {
      data = path == "-" ? try readStandardInput() : try UserFiles.readAll(path: path, limit: inputLimit)
    } catch {
      throw inputFailure(error, path: path == "-" ? "standard input" : path)
    }
    let listed: [InputFile.Entry]
    do throws(UsageError) {
      listed = try InputFile.parse(String(decoding: data, as: UTF8.self), name: path == "-" ? "stdin" : path)
    } catch {
      throw HaulError(.invalidInput, error.message)
    }
    return given + listed
  }

  /// The command line's URLs put through the check a download makes of its URL, as the input
  /// file's lines are, so that a bad third URL stops the run before the first two download:
  /// `'notaurl' is not a URL (give a full URL such as …)`, `gopher://h/x: unsupported URL scheme …`.
  static func checkURLs(_ urls: [String]) throws(HaulError) {
    for url in urls {
      guard let reason = InputFile.urlProblem(url) else { continue }
      // Among several URLs the message must say which: most quote it already, some do not.
      throw HaulError(.invalidInput, reason.contains("'\(url)'") ? reason : "\(url): \(reason)")
    }
  }

  /// Tells the plan's notes on standard error, unless `-q`.
  static func tell(_ notes: [String], options: CommandLineOptions, sink: OutputSink) {
    guard !options.quiet else { return }
    for note in notes { sink.stderr("haul: \(ProgressLine.sanitize(note))\n") }
  }

  /// The downloads the entries stand for: the command line's options, with each entry's own
  /// on top (its `dir=` instead of `-d`, its headers after `-H`'s, …).
  static func jobs(_ options: CommandLineOptions, entries: [InputFile.Entry]) -> [DownloadJob] {
    let base = options.downloadOptions
    return entries.map { entry in
      let line = entry.options
      var library = base
      if let connections = line.connections { library.connections = connections }
      if let rate = line.rateLimit { library.rateLimit = rate == 0 ? nil : rate }
      if let attempts = line.maxAttempts { library.maxAttemptsWithoutProgress = attempts }
      if let timeout = line.timeout { library.stallTimeout = timeout }
      if let overwrite = line.overwrite { library.overwrite = overwrite }
      if let checksum = line.checksum { library.checksum = checksum }
      library.headers += line.headers.map { (name: $0.name, value: $0.value) }
      let directory = line.directory ?? options.directory ?? "."
      guard let output = line.output else {
        return DownloadJob(
          source: entry.url, destination: .directory(URL(fileURLWithPath: directory, isDirectory: true)),
          options: library, directory: directory)
      }
      // `out=sub/name` puts the file into a subdirectory.
      let path = LocalDirectory.withoutTrailingSlashes(directory) + "/" + output
      return DownloadJob(
        source: entry.url, destination: .file(URL(fileURLWithPath: path)), options: library,
        directory: LocalDirectory.parent(of: path) ?? ".")
    }
  }

  /// The directories the jobs write into, each once, in order.
  static func directories(of jobs: [DownloadJob]) -> [String] {
    var seen: Set<String> = []
    return jobs.compactMap { seen.insert($0.directory).inserted ? $0.directory : nil }
  }

  /// `cannot read the input file urls.txt: No such file or directory`, and the like.
  private static func inputFailure(_ error: LocalFileError, path: String) -> HaulError {
    switch error.reason {
    case .system(let cause):
      return HaulError(
        .fileSystem, "cannot read the input file \(path): \(String(cString: strerror(cause.errno)))",
        underlying: cause)
    case .notRegular(let kind):
      return HaulError(.fileSystem, "the input file \(path) is \(kind)", underlying: error)
    case .tooLarge(let limit):
      return HaulError(
        .fileSystem, "the input file \(path) is larger than \(ByteQuantity.format(Int64(limit)))",
        hint: "split it into several files", underlying: error)
    default:
      return HaulError(.fileSystem, "cannot read the input file: \(error)", underlying: error)
    }
  }
}
