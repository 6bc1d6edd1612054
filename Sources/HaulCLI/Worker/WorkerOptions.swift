import FoundationEssentials
import Haul

/// `haul worker`'s options (its own small table: none of the download options apply, a job
/// carries its own).
struct WorkerOptions: Equatable {
  var queue: String?
  var jobs = 4
  var name: String?
  var directory = "."
  var leaseSeconds = 30.0
  var rateLimit: Int64?
  var headers: [CommandLineOptions.Header] = []
  var exitWhenIdle = false
  var json = false
  var quiet = false
  var help = false

  static let usage = "Usage: haul worker --queue URL [-j N] [--name NAME] [-d BASE] [options]"

  static let table: [(synopsis: String, help: String)] = [
    (
      "--queue URL",
      "the queue: postgresql://user@host:port/db, its password in ~/.pgpass or $PGPASSWORD (default: $HAUL_QUEUE)"
    ),
    ("-j, --jobs N", "download up to N jobs at once (default 4)"),
    ("--name NAME", "the name `haul ls` shows for this worker (default host:pid)"),
    ("-d, --dir BASE", "write every job's file under BASE (default: the current directory)"),
    (
      "--lease SECONDS",
      "how long a claim lasts without renewal; a dead worker's jobs move after it (default 30)"
    ),
    ("--limit-rate RATE", "cap this worker's total download rate (e.g. 20M)"),
    ("-H, --header 'N: V'", "add a header to every request of this worker"),
    ("--exit-when-idle", "exit once nothing is queued, delayed or running in the whole queue"),
    ("--json", "one JSON object per event on standard output"),
    ("-q, --quiet", "print only errors"),
    ("-h, --help", "show this help"),
  ]

  static var helpText: String {
    let column = (table.map(\.synopsis.count).max() ?? 0) + 2
    let lines = table.map {
      "  " + $0.synopsis + String(repeating: " ", count: column - $0.synopsis.count) + $0.help
    }
    return """
      \(usage)

      Claims downloads from a PostgreSQL queue shared by many workers on many hosts, each under a
      lease it renews while the download runs; a job whose worker dies is taken over by another once
      the lease expires, resuming the .part file when the directory is shared. At most 4 connections
      per server over the whole fleet (see FleetQueue.setConnectionLimit). SIGINT or SIGTERM drains:
      the worker pauses its jobs, saves them and gives them back to the queue, then exits 0; a second
      SIGINT (Ctrl-C) exits at once (the leases then expire by themselves).

      Options:
      \(lines.joined(separator: "\n"))

      """
  }

  private enum Key {
    case queue, jobs, name, directory, lease, rateLimit, header, exitWhenIdle, json, quiet, help
  }

  /// The options of `table`, read by the scanner `haul daemon` shares.
  private static let scanner = OptionScanner<Key>(
    command: "worker",
    options: [
      .init(.queue, "queue", value: true), .init(.jobs, "jobs", short: "j", value: true),
      .init(.name, "name", value: true), .init(.directory, "dir", short: "d", value: true),
      .init(.lease, "lease", value: true), .init(.rateLimit, "limit-rate", value: true),
      .init(.header, "header", short: "H", value: true), .init(.exitWhenIdle, "exit-when-idle"),
      .init(.json, "json"), .init(.quiet, "quiet", short: "q"), .init(.help, "help", short: "h"),
    ])

  static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> WorkerOptions
  {
    var options = WorkerOptions()
    for found in try scanner.scan(arguments) {
      let (name, text) = (found.spelling, found.value)
      switch found.key {
      case .queue: options.queue = text
      case .jobs:
        guard let count = Int(text), (1...256).contains(count) else {
          throw UsageError("\(name): '\(text)' is not a number of jobs from 1 to 256")
        }
        options.jobs = count
      case .name:
        guard !text.isEmpty, text.utf8.count <= 200, !text.unicodeScalars.contains(where: { $0.value < 0x20 })
        else {
          throw UsageError("--name: a worker name has 1 to 200 printable characters")
        }
        options.name = text
      case .directory: options.directory = text
      case .lease:
        guard let seconds = Double(text), seconds.isFinite, (2...3600).contains(seconds) else {
          throw UsageError("--lease: '\(text)' is not a number of seconds from 2 to 3600")
        }
        options.leaseSeconds = seconds
      case .rateLimit:
        guard let rate = ByteQuantity.parse(text), rate > 0 else {
          throw UsageError("--limit-rate: '\(text)' is not a rate (e.g. 500K, 20M)")
        }
        options.rateLimit = rate
      case .header: options.headers.append(try CommandLineOptions.parseHeader(text, spelling: name))
      case .exitWhenIdle: options.exitWhenIdle = true
      case .json: options.json = true
      case .quiet: options.quiet = true
      case .help: options.help = true
      }
    }
    if options.queue == nil, let fromEnvironment = environment[PostgresAddress.environmentVariable],
      !fromEnvironment.isEmpty
    {
      options.queue = fromEnvironment
    }
    if options.queue == nil, !options.help {
      throw UsageError(
        "worker: which queue? Give --queue postgresql://… or set \(PostgresAddress.environmentVariable)")
    }
    return options
  }
}
