/// Options of curl, wget and aria2c that haul spells otherwise or does not need. Typed from
/// habit, each is still refused (a flag taken for another could do something else), but the
/// message says what haul does instead, so the next attempt works.
struct ForeignOption: Sendable {
  let spellings: [String]
  /// What to type instead, or why nothing is needed.
  let advice: String
  /// The long option the advice names: the advice is given only where that option exists
  /// (a subcommand's selection may lack it).
  let names: String?

  init(_ spellings: [String], _ advice: String, names: String? = nil) {
    self.spellings = spellings
    self.advice = advice
    self.names = names
  }

  static let all: [ForeignOption] = [
    ForeignOption(
      ["-O", "--remote-name", "--remote-name-all", "--output-document"],
      "haul names the file from the server by default, as curl -O does; -o FILE chooses the name (wget's -O)",
      names: "output"),
    ForeignOption(["-L", "--location"], "haul follows redirects by default (--max-redirs N limits them)"),
    ForeignOption(
      ["-C", "--continue-at"],
      "haul resumes its own downloads by itself; --continue resumes a partial file curl or wget left",
      names: "continue"),
    ForeignOption(
      ["-k", "--no-check-certificate", "--check-certificate"],
      "to skip the certificate check, use --insecure (spelt out: it is unsafe)", names: "insecure"),
    ForeignOption(
      ["-s", "--silent", "-#", "--progress-bar", "--no-verbose", "-nv"],
      "-q prints only errors; a terminal gets a progress line otherwise (aria2c's -s N, connections, is -x N)",
      names: "quiet"),
    ForeignOption(["-S", "--show-error"], "haul always prints errors"),
    ForeignOption(
      ["-f", "--fail", "--fail-with-body"],
      "haul fails on an error status by default (exit 8; the body is not saved)"),
    ForeignOption(["-v", "--verbose"], "haul has no verbose mode; --json prints every event", names: "json"),
    ForeignOption(
      ["--retry", "--retry-max-time", "-t", "--tries", "--max-tries"],
      "haul retries by default; --retries N retries N times after a failed attempt (default 10)",
      names: "retries"),
    ForeignOption(
      ["-T", "--read-timeout", "--connect-timeout", "--max-time", "--dns-timeout", "--speed-time"],
      "haul has no overall or connect time limit; --timeout SECONDS retries when no byte arrives for that long",
      names: "timeout"),
    ForeignOption(
      ["-m"],
      "haul has no overall time limit (curl's -m); --timeout SECONDS retries when no byte arrives for that long;"
        + " it does not follow links (wget's -m): -i FILE takes a list of URLs",
      names: "timeout"),
    ForeignOption(
      ["-r", "--recursive", "--mirror"],
      "haul downloads the URLs it is given and does not follow links: -i FILE takes a list of URLs",
      names: "input-file"),
    ForeignOption(["-P", "--directory-prefix"], "-d DIR saves into DIR (made when missing)", names: "dir"),
    ForeignOption(["--create-dirs"], "-d DIR makes a missing directory; -o needs its directory to exist"),
    ForeignOption(["-U"], "-A TEXT sets the User-Agent", names: "user-agent"),
    ForeignOption(
      ["--max-download-limit", "--max-overall-download-limit", "--limit"], "--limit-rate RATE",
      names: "limit-rate"),
    ForeignOption(
      ["--split", "--max-connection-per-server"], "-x N sets the connections", names: "connections"),
    ForeignOption(
      ["-Z", "--parallel-max", "--max-concurrent-downloads"],
      "-j N downloads N of several URLs at once (default 4)", names: "parallel"),
    ForeignOption(
      ["--http-user", "--http-password", "--password", "--user-password"], "-u USER[:PASSWORD] logs in",
      names: "user"),
    ForeignOption(
      ["--compressed", "--compression"],
      "haul saves the bytes as the server sends them (a gzip Content-Encoding stays compressed)"),
    ForeignOption(
      ["--content-disposition", "--trust-server-names", "-J", "--remote-header-name"],
      "haul takes the name from Content-Disposition, else the final URL, by default"),
    ForeignOption(["-nc", "--no-clobber"], "haul never replaces a file it did not make, unless --overwrite"),
  ]

  /// The advice for `spelling` among the options `longNames` offer, if it is a foreign habit.
  static func advice(for spelling: String, longNames: [String]) -> String? {
    guard let habit = all.first(where: { $0.spellings.contains(spelling) }) else { return nil }
    if let names = habit.names, !longNames.contains(names) { return nil }
    return habit.advice
  }
}
