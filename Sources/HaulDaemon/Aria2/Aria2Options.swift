import FoundationEssentials
import Haul
import HaulRPC

/// The aria2 options the daemon understands, as `addUri`, `changeOption` and
/// `changeGlobalOption` take them (`{"split": "4", "header": ["A: b"]}`) and `getOption`
/// returns them. Values are strings as in aria2 (numbers are accepted too); an option aria2 has
/// but Haul does not is ignored, as aria2 ignores options that do not apply.
struct Aria2Options: Sendable, Equatable {
  var directory: String?
  var output: String?
  var split: Int?
  var connectionsPerServer: Int?
  /// Bytes per second; 0 means no limit.
  var downloadLimit: Int64?
  var headers: [String]?
  var checksum: Checksum?
  var paused: Bool?
  /// aria2's `max-tries`: 0 means no limit.
  var maxTries: Int?
  var timeout: Double?
  var userAgent: String?
  var allowOverwrite: Bool?
  var checkCertificate: Bool?
  var referer: String?
  // Global only.
  var maxConcurrentDownloads: Int?
  /// Bytes per second; 0 means no limit.
  var overallDownloadLimit: Int64?

  /// The names `getOption`, `getGlobalOption` and the parser know.
  static let names = [
    "dir", "out", "split", "max-connection-per-server", "max-download-limit", "header", "checksum", "pause",
    "max-tries", "timeout", "user-agent", "allow-overwrite", "check-certificate", "referer",
    "max-concurrent-downloads", "max-overall-download-limit",
  ]

  static func parse(_ object: JSONObject) throws(RPCError) -> Aria2Options {
    var options = Aria2Options()
    for (name, value) in object.members {
      try options.set(name, value)
    }
    return options
  }

  private mutating func set(_ name: String, _ value: JSONValue) throws(RPCError) {
    if name == "header" {
      let lines: [String]
      switch value {
      case .string(let line): lines = [line]
      case .array(let values): lines = values.compactMap(\.string)
      default: throw Self.problem(name)
      }
      headers = (headers ?? []) + lines.filter { !$0.isEmpty }
      return
    }
    let text: String
    switch value {
    case .string(let string): text = string
    case .integer(let number): text = String(number)
    case .bool(let flag): text = flag ? "true" : "false"
    default: return  // aria2 ignores an option whose value is not a string.
    }
    switch name {
    case "dir": directory = try Self.nonEmpty(text, name)
    case "out": output = try Self.fileName(text, name)
    case "split": split = try Self.connections(text, name)
    case "max-connection-per-server": connectionsPerServer = try Self.connections(text, name)
    case "max-download-limit": downloadLimit = try Self.rate(text, name)
    case "checksum":
      do throws(HaulError) {
        checksum = try Checksum(parsing: text)
      } catch {
        throw RPCError("We encountered a problem while processing the option '--checksum': \(error.message)")
      }
    case "pause": paused = try Self.flag(text, name)
    case "max-tries":
      guard let tries = Int(text), tries >= 0 else { throw Self.problem(name) }
      maxTries = tries
    case "timeout":
      guard let seconds = Double(text), seconds > 0, seconds <= 600 else { throw Self.problem(name) }
      timeout = seconds
    case "user-agent": userAgent = text
    case "allow-overwrite": allowOverwrite = try Self.flag(text, name)
    case "check-certificate": checkCertificate = try Self.flag(text, name)
    case "referer": referer = text
    case "max-concurrent-downloads": maxConcurrentDownloads = try Self.count(text, name, maximum: 10_000)
    case "max-overall-download-limit": overallDownloadLimit = try Self.rate(text, name)
    default: break
    }
  }

  /// These options over `defaults`: what is set here wins; headers add up.
  func merged(over defaults: Aria2Options) -> Aria2Options {
    var merged = defaults
    merged.directory = directory ?? defaults.directory
    merged.output = output ?? defaults.output
    merged.split = split ?? defaults.split
    merged.connectionsPerServer = connectionsPerServer ?? defaults.connectionsPerServer
    merged.downloadLimit = downloadLimit ?? defaults.downloadLimit
    merged.headers = headers.map { (defaults.headers ?? []) + $0 } ?? defaults.headers
    merged.checksum = checksum ?? defaults.checksum
    merged.paused = paused ?? defaults.paused
    merged.maxTries = maxTries ?? defaults.maxTries
    merged.timeout = timeout ?? defaults.timeout
    merged.userAgent = userAgent ?? defaults.userAgent
    merged.allowOverwrite = allowOverwrite ?? defaults.allowOverwrite
    merged.checkCertificate = checkCertificate ?? defaults.checkCertificate
    merged.referer = referer ?? defaults.referer
    merged.maxConcurrentDownloads = maxConcurrentDownloads ?? defaults.maxConcurrentDownloads
    merged.overallDownloadLimit = overallDownloadLimit ?? defaults.overallDownloadLimit
    return merged
  }

  /// Sets what these options say on a download's options (the rest is left as it is).
  func apply(to options: inout DownloadOptions) throws(RPCError) {
    // aria2 opens min(split, connections per server) connections to a single server.
    switch (split, connectionsPerServer) {
    case (let split?, let perServer?): options.connections = min(64, min(split, perServer))
    case (let count?, nil), (nil, let count?): options.connections = min(64, count)
    case (nil, nil): break
    }
    if let downloadLimit { options.rateLimit = downloadLimit == 0 ? nil : downloadLimit }
    if let headers {
      var parsed: [(name: String, value: String)] = []
      for line in headers {
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
          throw RPCError(
            "We encountered a problem while processing the option '--header': '\(line)' is not NAME: VALUE")
        }
        parsed.append(
          (
            line[..<colon].trimmingASCIIWhitespace(),
            line[line.index(after: colon)...].trimmingASCIIWhitespace()
          ))
      }
      options.headers = parsed
    }
    if let referer {
      // One Referer: a changed one replaces the last (changeOption), never adds a second.
      options.headers.removeAll { $0.name.lowercased() == "referer" }
      options.headers.append(("Referer", referer))
    }
    if let checksum { options.checksum = checksum }
    if let maxTries { options.maxAttemptsWithoutProgress = Self.attempts(aria2Tries: maxTries) }
    if let timeout { options.stallTimeout = timeout }
    if let userAgent { options.userAgent = userAgent }
    if let allowOverwrite { options.overwrite = allowOverwrite }
    if let checkCertificate { options.verifyTLS = checkCertificate }
  }

  /// A download's options as aria2's `getOption` lists them: strings, headers one per line.
  static func rendered(_ options: DownloadOptions, destination: DownloadDestination) -> JSONObject {
    var object = JSONObject()
    switch destination {
    case .directory(let directory): object["dir"] = .string(directory.path)
    case .file(let file):
      object["dir"] = .string(file.deletingLastPathComponent().path)
      object["out"] = .string(file.lastPathComponent)
    }
    if let connections = options.connections {
      object["split"] = .string(String(connections))
      object["max-connection-per-server"] = .string(String(connections))
    }
    object["max-download-limit"] = .string(String(options.rateLimit ?? 0))
    if !options.headers.isEmpty {
      object["header"] = .string(options.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n"))
    }
    if let checksum = options.checksum { object["checksum"] = .string(checksum.description) }
    object["max-tries"] = .string(String(aria2Tries(options.maxAttemptsWithoutProgress)))
    object["timeout"] = .string(String(Int(options.stallTimeout)))
    object["user-agent"] = .string(options.userAgent)
    object["allow-overwrite"] = options.overwrite ? "true" : "false"
    // aria2 lists check-certificate among the global options only.
    return object
  }

  // MARK: - Values

  /// aria2's `max-tries` for Haul's attempts: 0 is aria2's "no limit", so Haul's 0 (no retries,
  /// a single attempt) is 1, and no limit (`Int.max`, `--retries inf`) is 0. Writing back what
  /// `getOption` showed (AriaNg does) must not turn one attempt into endless retries.
  static func aria2Tries(_ attempts: Int) -> Int {
    attempts == Int.max ? 0 : max(1, attempts)
  }

  /// Haul's attempts for aria2's `max-tries` (0: no limit).
  static func attempts(aria2Tries tries: Int) -> Int {
    tries == 0 ? Int.max : tries
  }

  private static func problem(_ name: String) -> RPCError {
    RPCError("We encountered a problem while processing the option '--\(name)'.")
  }

  private static func nonEmpty(_ text: String, _ name: String) throws(RPCError) -> String {
    guard !text.isEmpty, !text.contains("\u{0}") else { throw problem(name) }
    return text
  }

  /// `out`: a path inside `dir` (`sub/NAME` makes `sub`; a leading `/` is read as relative, as
  /// aria2 joins it to `dir`). Each part must be a name `FileNameSanitizer` leaves as it is, the
  /// rule Haul keeps for names people choose: no `..` or `.`, no hidden (leading-dot) part, no
  /// control or bidi characters, no `\`, length-limited. Otherwise a client (or the web page
  /// behind a browser extension) could write outside `dir` or plant a hidden file there.
  private static func fileName(_ text: String, _ name: String) throws(RPCError) -> String {
    let parts = try nonEmpty(text, name).split(separator: "/", omittingEmptySubsequences: true)
    guard !parts.isEmpty, !text.hasSuffix("/"),
      parts.allSatisfy({ FileNameSanitizer.sanitize(String($0)) == String($0) })
    else {
      throw RPCError(
        "We encountered a problem while processing the option '--\(name)': '\(text)' does not name a file inside the directory"
      )
    }
    return text
  }

  /// `split` and `max-connection-per-server`: 1 to 64. Past the limit the message says what it
  /// is and why (aria2 takes any `split`; a client that sends 128 must learn what to send).
  private static func connections(_ text: String, _ name: String) throws(RPCError) -> Int {
    if let count = Int(text), count > 64 {
      throw RPCError(
        "We encountered a problem while processing the option '--\(name)': haul opens at most 64 "
          + "connections to one file (asked for \(count)): more do not make a download faster, they "
          + "only load the server, and many servers refuse or block a client that opens that many")
    }
    return try count(text, name)
  }

  private static func count(_ text: String, _ name: String, maximum: Int = 64) throws(RPCError) -> Int {
    guard let count = Int(text), count >= 1, count <= maximum else { throw problem(name) }
    return count
  }

  /// aria2's sizes: bytes, or with K or M (1024-based); 0 for none.
  private static func rate(_ text: String, _ name: String) throws(RPCError) -> Int64 {
    if text == "0" { return 0 }
    guard let rate = ByteQuantity.parse(text), rate > 0 else { throw problem(name) }
    return rate
  }

  private static func flag(_ text: String, _ name: String) throws(RPCError) -> Bool {
    switch text {
    case "true": return true
    case "false": return false
    default: throw problem(name)
    }
  }
}
