import HaulCore

/// A mistake on the command line: `haul` prints `haul: <message>` and `Try 'haul --help'.`, and exits 2.
struct UsageError: Error, Equatable, CustomStringConvertible {
  let message: String

  init(_ message: String) { self.message = message }

  var description: String { message }
}

/// What the command line asks for.
enum CommandRequest: Equatable {
  case download(CommandLineOptions)
  case help
  case version
}

/// The parsed options of one `haul` run.
struct CommandLineOptions: Equatable {
  struct Header: Equatable {
    let name: String
    let value: String
  }

  /// The URLs on the command line, in order.
  var urls: [String] = []
  /// `-i`: a file with more URLs, one per line (`-` is standard input).
  var inputFile: String?
  /// `-j`: downloads at once when there are several (default 4).
  var parallel: Int?
  /// `-o`: exactly this file.
  var output: String?
  /// `-d`: a directory for the server-suggested name; nil means the current directory.
  var directory: String?
  /// `-x`: nil lets the library choose (automatic, up to 16).
  var connections: Int?
  var rateLimit: Int64?
  /// Whether `--limit-rate` was given (`0` leaves `rateLimit` nil): `haul ui` attached to an
  /// owner then lifts the owner's limit.
  var rateLimitGiven = false
  /// `--retries`: retries after a failed attempt, in a row without progress (curl's `--retry`);
  /// 0 for none, `Int.max` for `inf`; nil: `defaultRetries`.
  var retries: Int?
  var timeout: Double?
  var headers: [Header] = []
  var overwrite = false
  /// `--continue`: resume a partial haul did not make.
  var continuePartial = false
  /// `--refresh-url-command CMD`: run for a fresh URL when the link expires mid-download.
  var refreshURLCommand: String?
  /// `--auto-rename`: number a file name another URL of the run already uses, instead of refusing.
  var autoRename = false
  var quiet = false
  var json = false
  var insecure = false
  /// `--checksum ALGO=HEX`.
  var checksum: Checksum?
  /// `--no-sha256`.
  var skipSHA256 = false
  /// `--cacert`, `--capath`, `--cert`, `--key`, `--pubkey` (the environment's trust is added in `downloadOptions`).
  var tls = TLSOptions()
  /// `-u`, `--netrc`, `-e`, `-b`, `-c`, `--proxy`, `--noproxy`, `-4`/`-6`, `--resolve`, limits.
  var network = NetworkOptions()
  /// `-u USER` without a password: `Credentials` asks for it before the download.
  var asksForPassword = false
  /// `-A`; nil keeps the library's.
  var userAgent: String?
  /// `-N`: only when the server's copy is newer than the local file.
  var newerOnly = false
  /// `-R`: the server's modification time on the finished file (also with `-N`).
  var remoteTime = false
  /// The values of a subcommand's own options (`haul add --paused --position 2`), by long
  /// name; a flag's value is "". The subcommand reads them after parsing.
  var extras: [String: String] = [:]

  /// The first URL (the only one, unless several were given).
  var url: String {
    get { urls.first ?? "" }
    set { urls = [newValue] + urls.dropFirst() }
  }

  /// Several downloads in one run: more than one URL, or an input file.
  var isBatch: Bool { urls.count > 1 || inputFile != nil }

  static let defaultParallel = 4
  /// `--retries` when not given: 10 retries, so 11 attempts in a row without progress.
  static let defaultRetries = 10

  /// The library counts attempts, `--retries` the retries after the first: N retries are
  /// N + 1 attempts (`Int.max`, `inf`, stays unlimited).
  static func attempts(retries: Int) -> Int {
    retries == Int.max ? Int.max : retries + 1
  }

  /// The library options these command-line options stand for.
  var downloadOptions: DownloadOptions {
    var options = DownloadOptions()
    options.connections = connections
    options.rateLimit = rateLimit
    options.maxAttemptsWithoutProgress = Self.attempts(retries: retries ?? Self.defaultRetries)
    if let timeout { options.stallTimeout = timeout }
    options.headers = headers.map { (name: $0.name, value: $0.value) }
    options.overwrite = overwrite
    options.continuePartial = continuePartial
    // -N compares the local file's time with the server's: as with wget, that time is the server's.
    options.remoteTime = remoteTime || newerOnly
    options.verifyTLS = !insecure
    options.checksum = checksum
    options.computeSHA256 = !skipSHA256
    options.keepPartialOnCancel = true
    options.tls = Self.trust(tls, environment: Self.environmentValue)
    options.network = network
    if let userAgent { options.userAgent = userAgent }
    options.refreshURL = refreshURLCommand.map(RefreshCommand.refresher)
    return options
  }
}

// MARK: - The option table

/// One command-line option: its spellings, whether it takes a value, its help, and what it does.
struct OptionSpec: Sendable {
  /// What applying an option does to the parse.
  enum Effect {
    case proceed
    case stop(CommandRequest)
  }

  typealias Apply =
    @Sendable (_ options: inout CommandLineOptions, _ value: String, _ spelling: String)
    throws(UsageError) -> Effect

  let short: Character?
  let long: String
  /// The value's placeholder in help (`FILE`), or nil for a flag.
  let valueName: String?
  let help: String
  let apply: Apply

  var takesValue: Bool { valueName != nil }

  /// `-o, --output FILE` as shown in help.
  var synopsis: String {
    let names = (short.map { "-\($0), " } ?? "    ") + "--" + long
    return valueName.map { names + " " + $0 } ?? names
  }

  static func flag(
    _ short: Character?, _ long: String, _ help: String,
    _ apply: @escaping @Sendable (inout CommandLineOptions) -> Effect
  ) -> OptionSpec {
    OptionSpec(short: short, long: long, valueName: nil, help: help) { options, _, _ in apply(&options) }
  }

  static func value(
    _ short: Character?, _ long: String, _ valueName: String, _ help: String, _ apply: @escaping Apply
  ) -> OptionSpec {
    OptionSpec(short: short, long: long, valueName: valueName, help: help, apply: apply)
  }
}

extension CommandLineOptions {
  /// Every option `haul` knows, in the order help lists them.
  static let table: [OptionSpec] = generalTable + networkTable

  /// The table's first part: where files go, how they are fetched and checked, what is printed.
  static let generalTable: [OptionSpec] = [
    .value("o", "output", "FILE", "save to exactly FILE (not with --dir)") {
      options, value, spelling throws(UsageError) in
      let name = try nonEmpty(value, spelling: spelling, "the file name")
      // curl pairs each -o with a URL of its own; haul saves one URL with -o, so a second one
      // would silently win.
      if let first = options.output {
        throw UsageError(
          "-o/--output is given twice ('\(first)', then '\(name)'); it names the one file of one URL "
            + "(with several URLs use --dir, or out=NAME in an input file)")
      }
      options.output = name
      return .proceed
    },
    .value("d", "dir", "DIR", "save into DIR under the server's file name (default: .)") {
      options, value, spelling throws(UsageError) in
      options.directory = try nonEmpty(value, spelling: spelling, "the directory name")
      return .proceed
    },
    .value("i", "input-file", "FILE", "download the URLs in FILE too ('-': standard input; format below)") {
      options, value, spelling throws(UsageError) in
      options.inputFile = try nonEmpty(value, spelling: spelling, "the file name")
      return .proceed
    },
    .value("j", "parallel", "N", "with several URLs, download N at once, 1 to 64 (default: 4)") {
      options, value, spelling throws(UsageError) in
      options.parallel = try parseCount(value, spelling: spelling)
      return .proceed
    },
    .value("x", "connections", "N", "connections to use, 1 to 64 (default: automatic, up to 16)") {
      options, value, spelling throws(UsageError) in
      // curl's -x is its proxy.
      if value.contains(":") {
        throw UsageError(
          "\(spelling): '\(value)' is not a number of connections (curl's -x PROXY is --proxy URL)")
      }
      options.connections = try parseCount(value, spelling: spelling)
      return .proceed
    },
    .value(nil, "limit-rate", "RATE", "receive at most RATE bytes per second (500K, 2M; 0: no limit)") {
      options, value, spelling throws(UsageError) in
      options.rateLimitGiven = true
      if isNoLimit(value) {
        options.rateLimit = nil
        return .proceed
      }
      guard let rate = parseRate(value) else {
        throw UsageError("\(spelling): '\(value)' is not a rate (examples: 500K, 2M; 0 for no limit)")
      }
      options.rateLimit = rate
      return .proceed
    },
    .value(
      nil, "checksum", "ALGO=HEX", "verify the file: sha-256, sha-512, sha-1 or md5 (exit 9 on mismatch)"
    ) {
      options, value, spelling throws(UsageError) in
      do throws(HaulError) {
        options.checksum = try Checksum(parsing: value)
      } catch {
        // The hint tells the format: a bare digest says only "is not a checksum" without it.
        throw UsageError("\(spelling): \(error.message)" + (error.hint.map { " (\($0))" } ?? ""))
      }
      return .proceed
    },
    .flag(nil, "no-sha256", "skip the file's SHA-256 when nothing needs verifying (saves CPU)") {
      $0.skipSHA256 = true
      return .proceed
    },
    .value(
      nil, "retries", "N",
      "retry up to N times in a row after a failed attempt; 0: none, inf: never give up (default: \(defaultRetries))"
    ) {
      options, value, spelling throws(UsageError) in
      options.retries = try parseRetries(value, spelling: spelling)
      return .proceed
    },
    .value(nil, "timeout", "SECONDS", "retry when no byte arrives for SECONDS (default: 30)") {
      options, value, spelling throws(UsageError) in
      guard let seconds = parseSeconds(value) else {
        throw UsageError("\(spelling): '\(value)' is not a positive number of seconds")
      }
      options.timeout = seconds
      return .proceed
    },
    .value("H", "header", "'NAME: VALUE'", "send this request header (repeatable)") {
      options, value, spelling throws(UsageError) in
      options.headers.append(try parseHeader(value, spelling: spelling))
      return .proceed
    },
    .flag(nil, "overwrite", "replace a file haul did not make, or one changed on the server") {
      $0.overwrite = true
      return .proceed
    },
    .flag(nil, "continue", "resume a partial haul did not make (curl's, wget's, a .part without state)") {
      $0.continuePartial = true
      return .proceed
    },
    .value(
      nil, "refresh-url-command", "CMD",
      "if the link expires mid-download, go on from the URL CMD prints (sh -c; $HAUL_URL: the old URL)"
    ) {
      options, value, spelling throws(UsageError) in
      options.refreshURLCommand = try nonEmpty(value, spelling: spelling, "the command")
      return .proceed
    },
    .flag(nil, "auto-rename", "with several URLs, number a name another URL takes (small.1.bin)") {
      $0.autoRename = true
      return .proceed
    },
    .flag("q", "quiet", "print nothing but errors") {
      $0.quiet = true
      return .proceed
    },
    .flag(nil, "json", "print one JSON object per event on standard output") {
      $0.json = true
      return .proceed
    },
    .flag(nil, "insecure", "do not verify TLS certificates or SSH host keys (testing only)") {
      $0.insecure = true
      return .proceed
    },
    .flag(nil, "version", "print the version and exit") { _ in .stop(.version) },
    .flag("h", "help", "print this help and exit") { _ in .stop(.help) },
  ]

  static func spec(long name: String, in specs: [OptionSpec] = table) -> OptionSpec? {
    specs.first { $0.long == name }
  }
  static func spec(short name: Character, in specs: [OptionSpec] = table) -> OptionSpec? {
    specs.first { $0.short == name }
  }

  // MARK: Parsing

  /// Parses the arguments after the program name.
  static func parse(_ arguments: [String]) throws(UsageError) -> CommandRequest {
    let (options, positionals, stop) = try scan(arguments)
    if let stop { return stop }
    return try checked(options, urls: positionals)
  }

  /// The options `specs` know (the table, or a subcommand's selection of it with options of its
  /// own) and the positional arguments, in order; or the request an option stopped at
  /// (`--help`). No check across options: `parse` does those for downloads.
  static func scan(_ arguments: [String], specs: [OptionSpec] = table) throws(UsageError) -> (
    options: CommandLineOptions, positionals: [String], stop: CommandRequest?
  ) {
    var options = CommandLineOptions()
    var positionals: [String] = []
    var index = 0
    var optionsEnded = false

    /// The value for `spec`: the inline text if any, else the next argument.
    func value(for spec: OptionSpec, spelling: String, inline: String?) throws(UsageError) -> String {
      if let inline { return inline }
      guard index < arguments.count else {
        throw UsageError("\(spelling): missing \(spec.valueName ?? "value")")
      }
      defer { index += 1 }
      return arguments[index]
    }

    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
        positionals.append(argument)
      } else if argument == "--" {
        optionsEnded = true
      } else if argument.hasPrefix("--") {
        let body = argument.dropFirst(2)
        let name: String
        let inline: String?
        if let equals = body.firstIndex(of: "=") {
          name = String(body[..<equals])
          inline = String(body[body.index(after: equals)...])
        } else {
          name = String(body)
          inline = nil
        }
        let spelling = "--" + name
        guard let spec = spec(long: name, in: specs) else { throw unknownOption(spelling, among: specs) }
        let text: String
        if spec.takesValue {
          text = try value(for: spec, spelling: spelling, inline: inline)
        } else {
          guard inline == nil else { throw UsageError("\(spelling): takes no value") }
          text = ""
        }
        if case .stop(let request) = try spec.apply(&options, text, spelling) {
          return (options, positionals, request)
        }
      } else {
        // `-output` is far likelier a typo for `--output` than `-o utput`.
        // So is wget's `-nc` or `-nv` one option, not `-n` and `-c`.
        if argument.count > 2,
          spec(long: String(argument.dropFirst()), in: specs) != nil
            || ForeignOption.advice(for: argument, longNames: specs.map(\.long)) != nil
        {
          throw unknownOption(argument, among: specs)
        }
        // One or more short options: `-q`, `-qx4`, `-o FILE`, `-oFILE`.
        var rest = Substring(argument.dropFirst())
        while let letter = rest.first {
          rest = rest.dropFirst()
          let spelling = "-" + String(letter)
          guard let spec = spec(short: letter, in: specs) else { throw unknownOption(spelling, among: specs) }
          var text = ""
          if spec.takesValue {
            text = try value(for: spec, spelling: spelling, inline: rest.isEmpty ? nil : String(rest))
            rest = ""
          }
          if case .stop(let request) = try spec.apply(&options, text, spelling) {
            return (options, positionals, request)
          }
        }
      }
    }
    return (options, positionals, nil)
  }

  /// A download's options checked across each other, with its URLs.
  static func checked(_ options: CommandLineOptions, urls positionals: [String]) throws(UsageError)
    -> CommandRequest
  {
    var options = options
    if options.output != nil, options.directory != nil {
      throw UsageError("--output and --dir cannot be used together (--output names the whole path)")
    }
    guard !positionals.isEmpty || options.inputFile != nil else { throw UsageError("no URL given") }
    guard !positionals.contains("") else { throw UsageError("the URL is empty") }
    options.urls = positionals
    if options.isBatch, options.output == "-" {
      throw UsageError("-o - writes one download to standard output; with several URLs use --dir")
    }
    if options.isBatch, options.output != nil {
      throw UsageError("--output names one file; with several URLs use --dir")
    }
    if let output = options.output, output != "-", let problem = nameTooLong(output) {
      throw UsageError("--output: \(problem)")
    }
    if options.output == "-", options.json {
      throw UsageError("-o - writes the file to standard output, where --json would write its lines too")
    }
    if options.isBatch, options.newerOnly {
      throw UsageError("--newer-only works with one URL (it compares that URL's local file)")
    }
    return .download(options)
  }

  // MARK: Values

  /// A name that must not be empty (`what`: "the file name", for the message).
  static func nonEmpty(_ value: String, spelling: String, _ what: String) throws(UsageError) -> String {
    guard !value.isEmpty else { throw UsageError("\(spelling): \(what) is empty") }
    return value
  }

  /// Why the last component of `path` cannot be a download's name, or nil: NAME.part and
  /// NAME.haul.tmp lie beside it while it downloads, and a file system takes 255 bytes a name
  /// (a longer one failed mid-way as "NAME.part: lstat: File name too long").
  static func nameTooLong(_ path: String) -> String? {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    let limit = FileNameSanitizer.maximumBytes
    guard name.utf8.count > limit else { return nil }
    return "the file name is \(name.utf8.count) bytes long, and haul takes at most \(limit) "
      + "(it keeps NAME\(FileNameSanitizer.longestOwnSuffix) beside it while downloading); choose a shorter one"
  }

  /// A count of connections or downloads: a whole number from 1 to 64.
  static func parseCount(_ text: String, spelling: String) throws(UsageError) -> Int {
    guard let count = Int(text), (1...64).contains(count) else {
      throw UsageError("\(spelling): '\(text)' is not a number from 1 to 64")
    }
    return count
  }

  /// `--retries`: a whole number of retries (0: none, one attempt), or `inf` for no limit
  /// (`Int.max`), as curl's `--retry` and wget's `--tries=inf`.
  static func parseRetries(_ text: String, spelling: String) throws(UsageError) -> Int {
    if ["inf", "infinite", "unlimited"].contains(text.lowercased()) { return Int.max }
    guard let count = Int(text), count >= 0, text.allSatisfy(\.isASCII) else {
      throw UsageError("\(spelling): '\(text)' is not a whole number (0: no retries) or inf")
    }
    return count
  }

  /// `500K`, `2M`, `2MiB/s`: a positive number of bytes per second.
  static func parseRate(_ text: String) -> Int64? {
    var text = Substring(text)
    if text.lowercased().hasSuffix("/s") { text = text.dropLast(2) }
    guard let rate = ByteQuantity.parse(String(text)), rate > 0 else { return nil }
    return rate
  }

  /// `0` (also `0K`, `0/s`): no limit, as curl's `--limit-rate 0` and the input file's
  /// `max-download-limit=0`. Only a zero as written: `0.1` bytes a second is a rate too small.
  static func isNoLimit(_ text: String) -> Bool {
    let number = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
    guard number.contains("0"), number.allSatisfy({ $0 == "0" || $0 == "." }) else { return false }
    var text = Substring(text)
    if text.lowercased().hasSuffix("/s") { text = text.dropLast(2) }
    return ByteQuantity.parse(String(text)) == 0
  }

  /// `30`, `2.5`, `.5`: a positive, finite number of seconds, in plain decimal.
  static func parseSeconds(_ text: String) -> Double? {
    let allowed = text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
    guard !text.isEmpty, allowed, text.filter({ $0 == "." }).count <= 1, text != ".",
      let seconds = Double(text), seconds.isFinite, seconds > 0
    else { return nil }
    return seconds
  }

  /// `Name: value`, where the name is an HTTP token and the value's surrounding blanks are trimmed.
  static func parseHeader(_ text: String, spelling: String) throws(UsageError) -> Header {
    guard let colon = text.firstIndex(of: ":") else {
      throw UsageError("\(spelling): '\(text)' is not a header (expected 'Name: value')")
    }
    let name = String(text[..<colon])
    guard !name.isEmpty else {
      throw UsageError("\(spelling): '\(text)' has no name before the colon (expected 'Name: value')")
    }
    guard name.unicodeScalars.allSatisfy(isTokenCharacter) else {
      throw UsageError("\(spelling): '\(name)' is not a valid header name")
    }
    let blanks: Set<Character> = [" ", "\t"]
    var value = text[text.index(after: colon)...]
    while let first = value.first, blanks.contains(first) { value = value.dropFirst() }
    while let last = value.last, blanks.contains(last) { value = value.dropLast() }
    guard value.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }) else {
      throw UsageError("\(spelling): the value of '\(name)' contains control characters")
    }
    return Header(name: name, value: String(value))
  }

  private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
    guard scalar.isASCII else { return false }
    if ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) {
      return true
    }
    return "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
  }

  // MARK: Unknown options

  static func unknownOption(_ spelling: String, among specs: [OptionSpec] = table) -> UsageError {
    if let advice = ForeignOption.advice(for: spelling, longNames: specs.map(\.long)) {
      return UsageError("unknown option '\(spelling)': \(advice)")
    }
    if let suggestion = suggestion(for: spelling, among: specs) {
      return UsageError("unknown option '\(spelling)' (did you mean '\(suggestion)'?)")
    }
    return UsageError("unknown option '\(spelling)'")
  }

  /// The closest known long option, when it is close enough to be a likely typo.
  static func suggestion(for spelling: String, among specs: [OptionSpec] = table) -> String? {
    suggestion(for: spelling, longNames: specs.map(\.long))
  }

  /// The closest of `longNames` (without their `--`), when it is close enough to be a likely
  /// typo; also what `OptionScanner` suggests for `haul daemon` and `haul worker`.
  static func suggestion(for spelling: String, longNames: [String]) -> String? {
    guard spelling.hasPrefix("--") else {
      // `-output` instead of `--output`.
      let word = String(spelling.dropFirst())
      return word.count > 1 && longNames.contains(word) ? "--" + word : nil
    }
    let word = spelling.dropFirst(2).lowercased()
    guard !word.isEmpty else { return nil }
    var best: (name: String, distance: Int)?
    for long in longNames {
      let distance = long.hasPrefix(word) && word.count >= 2 ? 0 : editDistance(Array(word), Array(long))
      if distance < (best?.distance ?? Int.max) { best = (long, distance) }
    }
    guard let best, best.distance <= max(1, min(2, word.count / 3)) else { return nil }
    return "--" + best.name
  }

  /// Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps.
  static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
    var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in stride(from: 1, through: a.count, by: 1) {
      for j in stride(from: 1, through: b.count, by: 1) {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
        }
      }
    }
    return d[a.count][b.count]
  }
}
