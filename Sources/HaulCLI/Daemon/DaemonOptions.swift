import FoundationEssentials
import Haul

/// `haul daemon`'s options: aria2's names where aria2 has the option.
struct DaemonOptions: Equatable {
  var catalog: String?
  var directory = "."
  var port: UInt16 = 6800
  var secret: String?
  var secretFile: String?
  var listenAll = false
  var allowOriginAll = false
  var allowedHosts: [String] = []
  var maximumRequestSize = 2 << 20
  var maxConcurrentDownloads: Int?
  var overallLimit: Int64?
  var quiet = false
  var help = false

  static let usage =
    "Usage: haul daemon [--catalog FILE] [--rpc-listen-port N] [--rpc-secret S | --rpc-secret-file F] [--rpc-listen-all]"

  static let table: [(synopsis: String, help: String)] = [
    (
      "--catalog FILE",
      "the catalog (default: $XDG_DATA_HOME/haul/catalog.sqlite, else ~/.local/share/haul/…)"
    ),
    ("-d, --dir DIR", "where downloads go unless a call says otherwise (default: the current directory)"),
    ("--rpc-listen-port N", "the port (default 6800, as aria2; 0 picks a free one and prints it)"),
    ("--rpc-secret S", "the secret every call must send as \"token:S\" (other users see it in ps)"),
    ("--rpc-secret-file F", "read the secret from the first line of F instead"),
    ("--rpc-listen-all", "listen on every address, not only 127.0.0.1 and ::1 (needs a secret given)"),
    ("--rpc-allow-origin-all", "let web pages of any origin read answers (a web UI such as AriaNg)"),
    ("--rpc-allow-host NAME", "accept requests addressed to NAME too (repeatable; with --rpc-listen-all)"),
    ("--rpc-max-request-size SIZE", "the largest request (default 2M)"),
    ("-j, --max-concurrent-downloads N", "downloads running at once (default 4)"),
    ("--max-overall-download-limit RATE", "cap the total download rate (e.g. 20M)"),
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

      Runs the download manager on its catalog in the foreground and serves aria2's JSON-RPC at
      http://127.0.0.1:6800/jsonrpc (WebSocket on the same path), so AriaNg, aria2p and other aria2
      clients drive Haul. Every call needs the secret as "token:SECRET"; without --rpc-secret or
      --rpc-secret-file one is made once and kept in rpc-secret beside the catalog (mode 0600).
      SIGINT or SIGTERM (or aria2.shutdown) stops it: running downloads keep their bytes and go
      on at the next start. While it runs, haul add, pause, resume and rm on its catalog act
      through it, and haul ls reads the catalog.

      Options:
      \(lines.joined(separator: "\n"))

      """
  }

  private enum Key {
    case catalog, directory, port, secret, secretFile, listenAll, allowOriginAll, allowHost
    case maximumRequestSize, maxConcurrentDownloads, overallLimit, quiet, help
  }

  /// The options of `table`, read by the scanner `haul worker` shares.
  private static let scanner = OptionScanner<Key>(
    command: "daemon",
    options: [
      .init(.catalog, "catalog", value: true), .init(.directory, "dir", short: "d", value: true),
      .init(.port, "rpc-listen-port", value: true), .init(.secret, "rpc-secret", value: true),
      .init(.secretFile, "rpc-secret-file", value: true), .init(.listenAll, "rpc-listen-all"),
      .init(.allowOriginAll, "rpc-allow-origin-all"), .init(.allowHost, "rpc-allow-host", value: true),
      .init(.maximumRequestSize, "rpc-max-request-size", value: true),
      .init(.maxConcurrentDownloads, "max-concurrent-downloads", short: "j", value: true),
      .init(.overallLimit, "max-overall-download-limit", value: true),
      .init(.quiet, "quiet", short: "q"), .init(.help, "help", short: "h"),
    ])

  static func parse(_ arguments: [String]) throws(UsageError) -> DaemonOptions {
    var options = DaemonOptions()
    for found in try scanner.scan(arguments) {
      let (name, text) = (found.spelling, found.value)
      switch found.key {
      case .catalog: options.catalog = try nonEmpty(text, name)
      case .directory: options.directory = try nonEmpty(text, name)
      case .port:
        guard let port = UInt16(text) else {
          throw UsageError("\(name): '\(text)' is not a port from 0 to 65535")
        }
        options.port = port
      case .secret: options.secret = try nonEmpty(text, name)
      case .secretFile: options.secretFile = try nonEmpty(text, name)
      case .listenAll: options.listenAll = true
      case .allowOriginAll: options.allowOriginAll = true
      case .allowHost: options.allowedHosts.append(try nonEmpty(text, name))
      case .maximumRequestSize:
        guard let size = ByteQuantity.parse(text), size >= 4096, size <= 1 << 30 else {
          throw UsageError("\(name): '\(text)' is not a size from 4K to 1G")
        }
        options.maximumRequestSize = Int(size)
      case .maxConcurrentDownloads:
        options.maxConcurrentDownloads = try CommandLineOptions.parseCount(text, spelling: name)
      case .overallLimit:
        guard let rate = CommandLineOptions.parseRate(text) else {
          throw UsageError("\(name): '\(text)' is not a rate (e.g. 500K, 20M)")
        }
        options.overallLimit = rate
      case .quiet: options.quiet = true
      case .help: options.help = true
      }
    }
    if options.secret != nil && options.secretFile != nil {
      throw UsageError("--rpc-secret and --rpc-secret-file are one or the other")
    }
    // Reachable from other machines, the secret must be one the user chose and knows about.
    if options.listenAll && options.secret == nil && options.secretFile == nil {
      throw UsageError(
        "--rpc-listen-all needs --rpc-secret S or --rpc-secret-file F: other machines reach the daemon then")
    }
    return options
  }

  private static func nonEmpty(_ text: String, _ spelling: String) throws(UsageError) -> String {
    guard !text.isEmpty else { throw UsageError("\(spelling) needs a value") }
    return text
  }
}
