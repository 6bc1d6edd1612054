import Foundation
import Haul
import Testing

@testable import HaulCLI

@Suite("Command-line parsing")
struct CommandLineOptionsTests {
  private func options(_ arguments: [String]) throws -> CommandLineOptions {
    guard case .download(let options) = try CommandLineOptions.parse(arguments) else {
      Issue.record("expected a download request for \(arguments)")
      return CommandLineOptions()
    }
    return options
  }

  private func usageError(_ arguments: [String]) -> String? {
    do {
      _ = try CommandLineOptions.parse(arguments)
      return nil
    } catch {
      return error.message
    }
  }

  @Test func defaults() throws {
    let parsed = try options(["https://example.com/a.iso"])
    #expect(parsed.url == "https://example.com/a.iso")
    #expect(parsed.output == nil)
    #expect(parsed.directory == nil)
    #expect(parsed.connections == nil)
    #expect(parsed.rateLimit == nil)
    #expect(parsed.retries == nil)
    #expect(parsed.timeout == nil)
    #expect(parsed.headers.isEmpty)
    #expect(!parsed.overwrite && !parsed.quiet && !parsed.json && !parsed.insecure)
    let library = parsed.downloadOptions
    #expect(library.connections == nil)
    // 10 retries after the first attempt.
    #expect(library.maxAttemptsWithoutProgress == 11)
    #expect(library.stallTimeout == 30)
    #expect(library.verifyTLS)
    #expect(library.keepPartialOnCancel)
  }

  /// Every value option in each spelling: `-x V`, `-xV`, `--long V`, `--long=V`.
  @Test(
    arguments: [
      (["-o", "out.bin"], true, "out.bin"),
      (["-oout.bin"], true, "out.bin"),
      (["--output", "out.bin"], true, "out.bin"),
      (["--output=out.bin"], true, "out.bin"),
      (["--output=a=b"], true, "a=b"),
      (["-o", "-dash"], true, "-dash"),
      (["-d", "dl"], false, "dl"),
      (["-ddl"], false, "dl"),
      (["--dir", "dl"], false, "dl"),
      (["--dir=dl"], false, "dl"),
    ] as [([String], Bool, String)])
  func pathOptions(arguments: [String], isOutput: Bool, expected: String) throws {
    for parsed in [try options(arguments + ["http://h/f"]), try options(["http://h/f"] + arguments)] {
      #expect((isOutput ? parsed.output : parsed.directory) == expected)
      #expect((isOutput ? parsed.directory : parsed.output) == nil)
      #expect(parsed.url == "http://h/f")
    }
  }

  @Test(arguments: [
    (["-x", "1"], 1), (["-x4"], 4), (["--connections", "64"], 64), (["--connections=8"], 8),
  ])
  func connections(arguments: [String], expected: Int) throws {
    let parsed = try options(arguments + ["u"])
    #expect(parsed.connections == expected)
    #expect(parsed.downloadOptions.connections == expected)
  }

  @Test(arguments: [
    (["--limit-rate", "500K"], Int64(500 * 1024)), (["--limit-rate=2M"], Int64(2 << 20)),
    (["--limit-rate", "1000"], Int64(1000)), (["--limit-rate=1.5k"], Int64(1536)),
    (["--limit-rate", "2MiB/s"], Int64(2 << 20)),
  ])
  func rates(arguments: [String], expected: Int64) throws {
    let parsed = try options(arguments + ["u"])
    #expect(parsed.rateLimit == expected)
    #expect(parsed.downloadOptions.rateLimit == expected)
  }

  /// `--limit-rate 0` is no limit, as curl's and the input file's `max-download-limit=0`; the
  /// last one given counts.
  @Test(arguments: [
    ["--limit-rate", "0"], ["--limit-rate=0K"], ["--limit-rate", "0.0M/s"],
    ["--limit-rate", "2M", "--limit-rate", "0"],
  ])
  func zeroRateIsNoLimit(arguments: [String]) throws {
    let parsed = try options(arguments + ["u"])
    #expect(parsed.rateLimit == nil)
    #expect(parsed.downloadOptions.rateLimit == nil)
    // Given, so that haul ui attached to an owner lifts the owner's limit.
    #expect(parsed.rateLimitGiven)
    #expect(try !options(["u"]).rateLimitGiven)
  }

  @Test func retriesAndTimeout() throws {
    // N retries after a failed attempt, as curl's --retry N: N + 1 attempts for the library.
    #expect(try options(["--retries", "3", "u"]).downloadOptions.maxAttemptsWithoutProgress == 4)
    #expect(try options(["--retries=1", "u"]).retries == 1)
    // inf is no limit (the library's Int.max).
    #expect(try options(["--retries=inf", "u"]).downloadOptions.maxAttemptsWithoutProgress == Int.max)
    #expect(try options(["--retries=INF", "u"]).retries == Int.max)
    #expect(try options(["--timeout", "2.5", "u"]).downloadOptions.stallTimeout == 2.5)
    #expect(try options(["--timeout=10", "u"]).timeout == 10)
    #expect(try options(["--timeout=.5", "u"]).timeout == 0.5)
  }

  @Test func headers() throws {
    let parsed = try options([
      "-H", "Authorization: Bearer x", "--header=X-A:1", "-HX-Empty:", "--header", "Accept:\t text/plain  ",
      "u",
    ])
    #expect(
      parsed.headers == [
        .init(name: "Authorization", value: "Bearer x"), .init(name: "X-A", value: "1"),
        .init(name: "X-Empty", value: ""), .init(name: "Accept", value: "text/plain"),
      ])
    let library = parsed.downloadOptions.headers
    #expect(library.map(\.name) == ["Authorization", "X-A", "X-Empty", "Accept"])
    #expect(library.map(\.value) == ["Bearer x", "1", "", "text/plain"])
  }

  @Test func flags() throws {
    let parsed = try options(["--overwrite", "-q", "--json", "--insecure", "u"])
    #expect(parsed.overwrite && parsed.quiet && parsed.json && parsed.insecure)
    let hex = String(repeating: "ab", count: 32)
    let checked = try options(["--checksum", "sha-256=\(hex)", "u"])
    #expect(checked.checksum?.description == "sha-256=\(hex)")
    #expect(checked.downloadOptions.checksum?.hex == hex)
    #expect(throws: UsageError.self) { try options(["--checksum=sha-256=xyz", "u"]) }
    #expect(throws: UsageError.self) { try options(["--checksum", "crc32=00", "u"]) }
    #expect(parsed.downloadOptions.overwrite)
    #expect(!parsed.downloadOptions.verifyTLS)
    #expect(parsed.downloadOptions.computeSHA256)
    #expect(try !options(["--no-sha256", "u"]).downloadOptions.computeSHA256)
    #expect(try options(["--quiet", "u"]).quiet)
    #expect(
      try options(["-qx2", "u"])
        == {
          var expected = CommandLineOptions()
          expected.url = "u"
          expected.quiet = true
          expected.connections = 2
          return expected
        }())
    #expect(try options(["-qo", "f", "u"]).output == "f")
  }

  @Test func helpAndVersion() throws {
    #expect(try CommandLineOptions.parse(["--help"]) == .help)
    #expect(try CommandLineOptions.parse(["-h"]) == .help)
    #expect(try CommandLineOptions.parse(["u", "-h", "--bogus"]) == .help)
    #expect(try CommandLineOptions.parse(["--version"]) == .version)
    #expect(try CommandLineOptions.parse(["--version", "--help"]) == .version)
    #expect(
      try CommandLineOptions.parse(["--", "--help"])
        == .download(
          {
            var expected = CommandLineOptions()
            expected.url = "--help"
            return expected
          }()))
  }

  @Test func doubleDashEndsOptions() throws {
    #expect(try options(["-q", "--", "-o"]).url == "-o")
    #expect(try options(["--", "u"]).url == "u")
    #expect(try options(["--", "a", "-b"]).urls == ["a", "-b"])
    #expect(usageError(["--"]) == "no URL given")
    #expect(try options(["-"]).url == "-")
  }

  @Test(
    arguments: [
      ([], "no URL given"),
      (["-q"], "no URL given"),
      (["-o", "f", "a", "b"], "--output names one file; with several URLs use --dir"),
      (["-o", "f", "-i", "list"], "--output names one file; with several URLs use --dir"),
      (["a", ""], "the URL is empty"),
      (["-j", "0", "a", "b"], "-j: '0' is not a number from 1 to 64"),
      (["--parallel=65", "a"], "--parallel: '65' is not a number from 1 to 64"),
      (["-i", "", "a"], "-i: the file name is empty"),
      ([""], "the URL is empty"),
      (["--bogus", "u"], "unknown option '--bogus'"),
      (["-z", "u"], "unknown option '-z'"),
      (["-qz", "u"], "unknown option '-z'"),
      (["--limt-rate", "2M", "u"], "unknown option '--limt-rate' (did you mean '--limit-rate'?)"),
      (["--overwirte", "u"], "unknown option '--overwirte' (did you mean '--overwrite'?)"),
      (["--conections=2", "u"], "unknown option '--conections' (did you mean '--connections'?)"),
      (["--over", "u"], "unknown option '--over' (did you mean '--overwrite'?)"),
      (["-output", "f", "u"], "unknown option '-output' (did you mean '--output'?)"),
      (["-help"], "unknown option '-help' (did you mean '--help'?)"),
      (["--Output=f", "u"], "unknown option '--Output' (did you mean '--output'?)"),
      (
        ["-o", "a", "-d", "b", "u"],
        "--output and --dir cannot be used together (--output names the whole path)"
      ),
      (
        ["--dir=b", "--output=a", "u"],
        "--output and --dir cannot be used together (--output names the whole path)"
      ),
      (["u", "-o"], "-o: missing FILE"),
      (["u", "--output"], "--output: missing FILE"),
      (["u", "--header"], "--header: missing 'NAME: VALUE'"),
      (["--output=", "u"], "--output: the file name is empty"),
      (
        ["-o", "a", "-o", "b", "u"],
        "-o/--output is given twice ('a', then 'b'); it names the one file of one URL "
          + "(with several URLs use --dir, or out=NAME in an input file)"
      ),
      (
        ["--output=a", "u", "-ob", "v"],
        "-o/--output is given twice ('a', then 'b'); it names the one file of one URL "
          + "(with several URLs use --dir, or out=NAME in an input file)"
      ),
      (["-d", "", "u"], "-d: the directory name is empty"),
      (["-x", "0", "u"], "-x: '0' is not a number from 1 to 64"),
      (["-x65", "u"], "-x: '65' is not a number from 1 to 64"),
      (["--connections=two", "u"], "--connections: 'two' is not a number from 1 to 64"),
      (["--connections=", "u"], "--connections: '' is not a number from 1 to 64"),
      (
        ["--limit-rate", "12Q", "u"], "--limit-rate: '12Q' is not a rate (examples: 500K, 2M; 0 for no limit)"
      ),
      (["--limit-rate=-5K", "u"], "--limit-rate: '-5K' is not a rate (examples: 500K, 2M; 0 for no limit)"),
      (["--limit-rate=-0", "u"], "--limit-rate: '-0' is not a rate (examples: 500K, 2M; 0 for no limit)"),
      (["--limit-rate=0.1", "u"], "--limit-rate: '0.1' is not a rate (examples: 500K, 2M; 0 for no limit)"),
      (["--limit-rate=0Q", "u"], "--limit-rate: '0Q' is not a rate (examples: 500K, 2M; 0 for no limit)"),
      (["--retries", "-1", "u"], "--retries: '-1' is not a whole number (0: no retries) or inf"),
      (["--retries=1.5", "u"], "--retries: '1.5' is not a whole number (0: no retries) or inf"),
      (["--retries=infinity", "u"], "--retries: 'infinity' is not a whole number (0: no retries) or inf"),
      (["--timeout", "0", "u"], "--timeout: '0' is not a positive number of seconds"),
      (["--timeout=-1", "u"], "--timeout: '-1' is not a positive number of seconds"),
      (["--timeout=inf", "u"], "--timeout: 'inf' is not a positive number of seconds"),
      (["--timeout=nan", "u"], "--timeout: 'nan' is not a positive number of seconds"),
      (["--timeout=1e3", "u"], "--timeout: '1e3' is not a positive number of seconds"),
      (["--timeout=1.2.3", "u"], "--timeout: '1.2.3' is not a positive number of seconds"),
      (["--timeout=.", "u"], "--timeout: '.' is not a positive number of seconds"),
      (["-H", "NoColon", "u"], "-H: 'NoColon' is not a header (expected 'Name: value')"),
      (["--header", ": v", "u"], "--header: ': v' has no name before the colon (expected 'Name: value')"),
      (["-H", "Bad Name: v", "u"], "-H: 'Bad Name' is not a valid header name"),
      (["-H", "X: a\nb", "u"], "-H: the value of 'X' contains control characters"),
      (["--quiet=yes", "u"], "--quiet: takes no value"),
      (["--help=1"], "--help: takes no value"),
    ] as [([String], String)])
  func usageErrors(arguments: [String], message: String) {
    #expect(usageError(arguments) == message)
  }

  @Test func usageErrorOutputAndStatus() async {
    let capture = OutputCapture()
    let status = await HaulCommand.run(arguments: ["--limit-rate", "12Q", "u"], sink: capture.sink)
    #expect(status == 2)
    #expect(capture.stdout.isEmpty)
    #expect(
      capture.stderr
        == "haul: --limit-rate: '12Q' is not a rate (examples: 500K, 2M; 0 for no limit)\nTry 'haul --help'.\n"
    )
  }

  /// A second -o no longer silently wins over the first: exit 2, naming both.
  @Test func repeatedOutputExitsTwo() async {
    let capture = OutputCapture()
    let status = await HaulCommand.run(arguments: ["-o", "a", "-o", "b", "http://h/f"], sink: capture.sink)
    #expect(status == 2)
    #expect(capture.stderr.hasPrefix("haul: -o/--output is given twice ('a', then 'b')"), "\(capture.stderr)")
  }

  @Test func suggestions() {
    #expect(CommandLineOptions.suggestion(for: "--jsn") == "--json")
    #expect(CommandLineOptions.suggestion(for: "--verison") == "--version")
    #expect(CommandLineOptions.suggestion(for: "--xyzzy") == nil)
    #expect(CommandLineOptions.suggestion(for: "--") == nil)
    #expect(CommandLineOptions.suggestion(for: "-json") == "--json")
    #expect(CommandLineOptions.editDistance(Array("abc"), Array("acb")) == 1)
    #expect(CommandLineOptions.editDistance(Array(""), Array("abc")) == 3)
  }

  /// curl's, wget's and aria2c's options typed from habit: refused, with what haul does instead.
  @Test(
    arguments: [
      (["-O", "u"], "-o FILE"),
      (["-LO", "u"], "follows redirects by default"),
      (["--location", "u"], "follows redirects by default"),
      (["-C", "-", "u"], "--continue"),
      (["-k", "u"], "--insecure"),
      (["--no-check-certificate", "u"], "--insecure"),
      (["-s", "u"], "-q"),
      (["--retry", "3", "u"], "--retries N"),
      (["--tries=3", "u"], "--retries N"),
      (["--max-time", "9", "u"], "--timeout SECONDS"),
      (["--connect-timeout", "9", "u"], "--timeout SECONDS"),
      (["-P", "d", "u"], "-d DIR"),
      (["-nc", "u"], "--overwrite"),
      (["-nv", "u"], "-q"),
      (["--max-download-limit=1M", "u"], "--limit-rate"),
      (["--output-document=x", "u"], "-o FILE"),
      (["-m", "9", "u"], "--timeout SECONDS"),
      (["-r", "u"], "-i FILE"),
      (["--mirror", "u"], "does not follow links"),
    ])
  func foreignHabits(arguments: [String], advice: String) {
    do {
      _ = try CommandLineOptions.parse(arguments)
      Issue.record("\(arguments) was accepted")
    } catch {
      #expect(error.message.hasPrefix("unknown option '"), "\(arguments): \(error.message)")
      #expect(error.message.contains(advice), "\(arguments): \(error.message)")
    }
  }

  /// A digest without its algorithm (as sha256sum prints it) is refused with the format to use.
  @Test func checksumWithoutAlgorithm() {
    let digest = String(repeating: "ab", count: 32)
    for value in [digest, "sha256:" + digest] {
      #expect(
        throws: UsageError(
          "--checksum: '\(value)' is not a checksum (write ALGO=HEX with ALGO one of sha-256, sha-512, sha-1, md5)"
        )
      ) {
        try CommandLineOptions.parse(["--checksum", value, "u"])
      }
    }
  }

  /// A name of 247 to 255 bytes is one a file system takes, but not its NAME.part: refused
  /// before any request with the limit, not as "lstat: File name too long" after the first.
  @Test func outputNameTooLongForThePartFile() throws {
    let longest = String(repeating: "y", count: 246)
    guard case .download(let options) = try CommandLineOptions.parse(["-o", "dir/" + longest, "u"]) else {
      Issue.record("not a download")
      return
    }
    #expect(options.output == "dir/" + longest)
    for name in [longest + "y", String(repeating: "é", count: 124)] {
      #expect(
        throws: UsageError(
          "--output: the file name is \(name.utf8.count) bytes long, and haul takes at most 246 "
            + "(it keeps NAME.haul.tmp beside it while downloading); choose a shorter one")
      ) {
        try CommandLineOptions.parse(["-o", "/tmp/" + name, "u"])
      }
    }
    #expect(throws: UsageError.self) {
      try InputFile.parse("http://h/a\n  out=\(longest)y", name: "urls.txt")
    }
  }

  /// curl's -x names a proxy: not read as a count of connections without a word on proxies.
  @Test func curlProxyFlag() {
    #expect(
      throws: UsageError(
        "-x: 'http://proxy:3128' is not a number of connections (curl's -x PROXY is --proxy URL)")
    ) {
      try CommandLineOptions.parse(["-x", "http://proxy:3128", "u"])
    }
  }

  /// A subcommand without --insecure gets no advice to use it, only the plain refusal.
  @Test func habitAdviceOnlyForOptionsOffered() {
    let specs = CommandLineOptions.table.filter { $0.long != "insecure" }
    #expect(CommandLineOptions.unknownOption("-k", among: specs).message == "unknown option '-k'")
    #expect(CommandLineOptions.unknownOption("-k").message.contains("--insecure"))
  }

  @Test func tableIsConsistent() {
    let table = CommandLineOptions.table
    #expect(Set(table.map(\.long)).count == table.count)
    let shorts = table.compactMap(\.short)
    #expect(Set(shorts).count == shorts.count)
    #expect(table.allSatisfy { !$0.help.isEmpty })
    for spec in table {
      #expect(HelpText.text.contains("--" + spec.long))
    }
    for option in InputFile.options {
      #expect(HelpText.text.contains("\n  " + option.name + "=" + option.valueName + " "))
      #expect(!option.help.isEmpty)
    }
  }

  @Test func helpTextHasExamplesAndExitCodes() {
    let help = HelpText.text
    #expect(help.hasPrefix("haul "))
    #expect(help.contains("Usage: haul [options] URL"))
    #expect(help.contains("--limit-rate 2M"))
    #expect(help.contains("--json"))
    #expect(help.contains("resume"))
    for (code, _) in ExitStatus.table { #expect(help.contains(" \(code)  ")) }
  }

  @Test func destinations() throws {
    var parsed = try options(["-o", "/tmp/x.bin", "u"])
    #expect(HaulCommand.destination(for: parsed) == .file(URL(fileURLWithPath: "/tmp/x.bin")))
    parsed = try options(["-d", "/tmp/dl", "u"])
    #expect(
      HaulCommand.destination(for: parsed) == .directory(URL(fileURLWithPath: "/tmp/dl", isDirectory: true)))
    parsed = try options(["u"])
    #expect(HaulCommand.destination(for: parsed) == .directory(URL(fileURLWithPath: ".", isDirectory: true)))
  }

  @Test func reporterStyles() throws {
    #expect(HaulCommand.reporterStyle(for: try options(["u"]), stderrIsTerminal: true) == .terminal)
    #expect(HaulCommand.reporterStyle(for: try options(["u"]), stderrIsTerminal: false) == .plain)
    #expect(HaulCommand.reporterStyle(for: try options(["-q", "u"]), stderrIsTerminal: true) == .quiet)
    #expect(
      HaulCommand.reporterStyle(for: try options(["-q", "--json", "u"]), stderrIsTerminal: true) == .json)
  }

  @Test func severalURLsAndAnInputFile() throws {
    let several = try options(["-d", "out", "-j", "8", "a", "b", "c"])
    #expect(several.urls == ["a", "b", "c"] && several.isBatch && several.parallel == 8)
    let listed = try options(["--input-file", "urls.txt"])
    #expect(listed.urls.isEmpty && listed.inputFile == "urls.txt" && listed.isBatch)
    #expect(try !options(["a"]).isBatch)
  }

  @Test func aBatchExitsWithItsFirstFailure() {
    #expect(BatchDownload.exitStatus([0, 0, 0], interrupted: false) == 0)
    #expect(BatchDownload.exitStatus([0, 8, 4, nil], interrupted: false) == 8)
    #expect(BatchDownload.exitStatus([0, nil], interrupted: true) == 130)
  }
}
