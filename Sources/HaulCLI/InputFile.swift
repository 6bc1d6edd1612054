import Haul
import HaulCore

/// An input file (`-i FILE`) in aria2's format: one URL per line, and below a URL, indented
/// lines of `name=value` options for that URL alone.
///
/// ```
/// # ISOs for the lab
/// https://example.com/debian.iso      # a comment after a blank
///   out=debian-12.iso
///   checksum=sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// https://mirror.example.com/big.img
///   dir=images
///   split=8
/// ```
///
/// Pure (no I/O): the whole file is checked before any download starts, and a mistake is a
/// usage error that names the file and the line.
struct InputFile {
  /// One URL of the file and what its option lines say.
  struct Entry: Equatable {
    let url: String
    /// 1-based line number of the URL.
    let line: Int
    var options = LineOptions()
  }

  /// The per-URL options haul takes from aria2's input-file format.
  struct LineOptions: Equatable {
    /// `out=`: the file name, inside the directory.
    var output: String?
    /// `dir=`: the directory (instead of `-d`).
    var directory: String?
    /// `checksum=ALGO=HEX`.
    var checksum: Checksum?
    /// `header=NAME: VALUE`, repeatable; sent after the command line's `-H` headers.
    var headers: [CommandLineOptions.Header] = []
    /// `split=N`: connections for this file.
    var split: Int?
    /// `max-connection-per-server=N`: with one server, also a cap on connections.
    var connectionsPerServer: Int?
    /// `max-download-limit=RATE`; 0 lifts `--limit-rate` for this file.
    var rateLimit: Int64?
    /// `max-tries=N`: attempts, as aria2 counts them (aria2's 0: no limit), as
    /// `maxAttemptsWithoutProgress`; `--retries` counts the retries after the first.
    var maxAttempts: Int?
    /// `timeout=SECONDS`.
    var timeout: Double?
    /// `allow-overwrite=true|false`.
    var overwrite: Bool?

    /// The connections these options ask for: aria2 opens min(split, connections per server)
    /// to a single server.
    var connections: Int? {
      switch (split, connectionsPerServer) {
      case (let split?, let perServer?): min(split, perServer)
      case (let split?, nil): split
      case (nil, let perServer?): perServer
      case (nil, nil): nil
      }
    }
  }

  /// An option an input-file line may carry: its name, and what its value does.
  struct Option: Sendable {
    typealias Apply =
      @Sendable (_ options: inout LineOptions, _ value: String, _ spelling: String) throws(UsageError) -> Void
    let name: String
    /// The value's placeholder in help (`NAME`).
    let valueName: String
    let help: String
    let apply: Apply

    /// `out=NAME`, as help shows it.
    var synopsis: String { name + "=" + valueName }
  }

  /// The options a line may carry, in the order `--help` and errors list them.
  static let options: [Option] = [
    Option(name: "out", valueName: "NAME", help: "the file name, inside the directory (sub/NAME makes sub)") {
      options, value, spelling throws(UsageError) in
      options.output = try fileName(value, spelling: spelling)
    },
    Option(name: "dir", valueName: "DIR", help: "the directory, instead of -d") {
      options, value, spelling throws(UsageError) in
      options.directory = try CommandLineOptions.nonEmpty(value, spelling: spelling, "the directory name")
    },
    Option(name: "checksum", valueName: "ALGO=HEX", help: "verify the file, as --checksum") {
      options, value, spelling throws(UsageError) in
      do throws(HaulError) {
        options.checksum = try Checksum(parsing: value)
      } catch {
        throw UsageError("\(spelling): \(error.message)" + (error.hint.map { " (\($0))" } ?? ""))
      }
    },
    Option(name: "header", valueName: "NAME: VALUE", help: "send this header too, as -H (repeatable)") {
      options, value, spelling throws(UsageError) in
      options.headers.append(try CommandLineOptions.parseHeader(value, spelling: spelling))
    },
    Option(name: "split", valueName: "N", help: "connections, as -x") {
      options, value, spelling throws(UsageError) in
      options.split = try CommandLineOptions.parseCount(value, spelling: spelling)
    },
    Option(name: "max-connection-per-server", valueName: "N", help: "at most N connections") {
      options, value, spelling throws(UsageError) in
      options.connectionsPerServer = try CommandLineOptions.parseCount(value, spelling: spelling)
    },
    Option(name: "max-download-limit", valueName: "RATE", help: "as --limit-rate; 0 lifts it") {
      options, value, spelling throws(UsageError) in
      if value == "0" {
        options.rateLimit = 0
        return
      }
      guard let rate = CommandLineOptions.parseRate(value) else {
        throw UsageError("\(spelling): '\(value)' is not a rate (examples: 500K, 2M, 0 for no limit)")
      }
      options.rateLimit = rate
    },
    Option(
      name: "max-tries", valueName: "N",
      help: "attempts in a row, as aria2 counts them (--retries N-1); 0 means no limit (aria2's meaning)"
    ) {
      options, value, spelling throws(UsageError) in
      guard let count = Int(value), count >= 0 else {
        throw UsageError("\(spelling): '\(value)' is not a whole number (0 for no limit)")
      }
      options.maxAttempts = count == 0 ? Int.max : count
    },
    Option(name: "timeout", valueName: "SECONDS", help: "as --timeout") {
      options, value, spelling throws(UsageError) in
      guard let seconds = CommandLineOptions.parseSeconds(value) else {
        throw UsageError("\(spelling): '\(value)' is not a positive number of seconds")
      }
      options.timeout = seconds
    },
    Option(name: "allow-overwrite", valueName: "true|false", help: "as --overwrite") {
      options, value, spelling throws(UsageError) in
      switch value {
      case "true": options.overwrite = true
      case "false": options.overwrite = false
      default: throw UsageError("\(spelling): '\(value)' is neither true nor false")
      }
    },
  ]

  /// Options that may appear more than once for one URL.
  static let repeatable: Set<String> = ["header"]

  /// Parses the whole text; `name` is how messages call the file (`urls.txt`, `standard input`).
  static func parse(_ text: String, name: String) throws(UsageError) -> [Entry] {
    var entries: [Entry] = []
    var seen: Set<String> = []
    // `\r\n` (one Character in Swift) and `\n` both end lines; empty ones keep the numbering.
    let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
    for (offset, line) in lines.enumerated() {
      let number = offset + 1
      let place = "\(name):\(number)"
      let indented = line.first.map(isBlank) ?? false
      let content = trimmed(withoutComment(line))
      guard !content.isEmpty else { continue }
      if !indented {
        if let blank = content.firstIndex(where: isBlank) {
          let second = trimmed(content[blank...]).prefix { !isBlank($0) }
          throw UsageError(
            "\(place): more than one URL on a line ('\(content[..<blank])', '\(second)'); "
              + "haul takes one URL per line (a comment starts with ' #')")
        }
        // The check a download makes of its URL, made here so a bad line stops the run first.
        if let problem = Self.urlProblem(String(content)) { throw UsageError("\(place): \(problem)") }
        entries.append(Entry(url: String(content), line: number))
        seen = []
        continue
      }
      guard !entries.isEmpty else {
        throw UsageError(
          "\(place): '\(content)' is indented, but no URL comes before it (options follow their URL)")
      }
      let optionName = String(content.prefix { $0 != "=" })
      guard optionName.count < content.count,
        optionName.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" })
      else {
        if content.contains("://") {
          throw UsageError(
            "\(place): '\(content)' is indented, so it would be an option of the URL above; "
              + "start a URL at the beginning of its line")
        }
        throw UsageError(
          "\(place): '\(content)' is not an option (indented lines below a URL are NAME=VALUE, e.g. out=file.iso)"
        )
      }
      let equals = content.index(content.startIndex, offsetBy: optionName.count)
      let value = String(content[content.index(after: equals)...])
      guard let option = options.first(where: { $0.name == optionName }) else {
        throw unknownOption(optionName, at: place)
      }
      guard seen.insert(optionName).inserted || repeatable.contains(optionName) else {
        throw UsageError(
          "\(place): \(optionName)= is given twice for the URL on line \(entries[entries.count - 1].line)")
      }
      try option.apply(&entries[entries.count - 1].options, value, "\(place): \(optionName)")
    }
    return entries
  }

  /// The line without its comment: `#` at the start or after a blank begins one (`#` inside
  /// a URL, as in `page#section`, does not).
  static func withoutComment(_ line: Substring) -> Substring {
    var previous: Character?
    for index in line.indices {
      if line[index] == "#", previous.map(isBlank) ?? true { return line[..<index] }
      previous = line[index]
    }
    return line
  }

  private static func isBlank(_ character: Character) -> Bool { character == " " || character == "\t" }

  private static func trimmed(_ text: Substring) -> Substring {
    var text = text
    while let first = text.first, isBlank(first) { text = text.dropFirst() }
    while let last = text.last, isBlank(last) { text = text.dropLast() }
    return text
  }

  /// `out=`: a relative path that stays inside the directory, as aria2 treats it.
  private static func fileName(_ value: String, spelling: String) throws(UsageError) -> String {
    let name = try CommandLineOptions.nonEmpty(value, spelling: spelling, "the file name")
    guard !name.hasPrefix("/") else {
      throw UsageError(
        "\(spelling): '\(name)' is absolute; out= names a file inside the directory (use dir= too)")
    }
    guard !name.split(separator: "/").contains(".."), !name.hasSuffix("/") else {
      throw UsageError("\(spelling): '\(name)' does not name a file inside the directory")
    }
    if let problem = CommandLineOptions.nameTooLong(name) { throw UsageError("\(spelling): \(problem)") }
    return name
  }

  private static func unknownOption(_ name: String, at place: String) -> UsageError {
    let known = options.map(\.name)
    var text = "\(place): unknown option '\(name)'"
    let close = known.min {
      CommandLineOptions.editDistance(Array(name), Array($0))
        < CommandLineOptions.editDistance(Array(name), Array($1))
    }
    if let close, CommandLineOptions.editDistance(Array(name), Array(close)) <= max(1, min(2, name.count / 3))
    {
      text += " (did you mean '\(close)'?)"
    } else {
      text += " (haul takes " + known.joined(separator: ", ") + ")"
    }
    return UsageError(text)
  }

  /// What the check a download makes of its URL says against `url` (its message, then its hint
  /// in brackets), or nil when a download can take it: for input lines and command-line URLs.
  static func urlProblem(_ url: String) -> String? {
    do throws(HaulError) {
      _ = try RequestURL.normalize(url)
      return nil
    } catch {
      return error.message + (error.hint.map { " (\($0))" } ?? "")
    }
  }
}
