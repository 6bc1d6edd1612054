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
    ("--queue URL", "the queue: postgresql://user:password@host:port/db (default: $HAUL_QUEUE)"),
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
      signal exits at once (the leases then expire by themselves).

      Options:
      \(lines.joined(separator: "\n"))

      """
  }

  static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> WorkerOptions
  {
    var options = WorkerOptions()
    var rest = arguments[...]
    func value(_ spelling: String, _ inline: String?) throws(UsageError) -> String {
      if let inline { return inline }
      guard let next = rest.popFirst() else { throw UsageError("\(spelling) needs a value") }
      return next
    }
    while let argument = rest.popFirst() {
      var name = argument
      var inline: String?
      if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        inline = String(argument[argument.index(after: equals)...])
      } else if argument.count > 2, argument.hasPrefix("-"), !argument.hasPrefix("--"),
        ["-j", "-d", "-H"].contains(String(argument.prefix(2)))
      {
        name = String(argument.prefix(2))
        inline = String(argument.dropFirst(2))
      }
      switch name {
      case "--queue": options.queue = try value(name, inline)
      case "-j", "--jobs":
        let text = try value(name, inline)
        guard let count = Int(text), (1...256).contains(count) else {
          throw UsageError("\(name): '\(text)' is not a number of jobs from 1 to 256")
        }
        options.jobs = count
      case "--name":
        let text = try value(name, inline)
        guard !text.isEmpty, text.utf8.count <= 200, !text.unicodeScalars.contains(where: { $0.value < 0x20 })
        else {
          throw UsageError("--name: a worker name has 1 to 200 printable characters")
        }
        options.name = text
      case "-d", "--dir": options.directory = try value(name, inline)
      case "--lease":
        let text = try value(name, inline)
        guard let seconds = Double(text), seconds.isFinite, (2...3600).contains(seconds) else {
          throw UsageError("--lease: '\(text)' is not a number of seconds from 2 to 3600")
        }
        options.leaseSeconds = seconds
      case "--limit-rate":
        let text = try value(name, inline)
        guard let rate = ByteQuantity.parse(text), rate > 0 else {
          throw UsageError("--limit-rate: '\(text)' is not a rate (e.g. 500K, 20M)")
        }
        options.rateLimit = rate
      case "-H", "--header":
        options.headers.append(try CommandLineOptions.parseHeader(try value(name, inline), spelling: name))
      case "--exit-when-idle": options.exitWhenIdle = true
      case "--json": options.json = true
      case "-q", "--quiet": options.quiet = true
      case "-h", "--help": options.help = true
      default: throw UsageError("worker: unknown option '\(argument)'")
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
