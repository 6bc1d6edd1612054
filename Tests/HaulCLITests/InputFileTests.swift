import Foundation
import Haul
import Testing

@testable import HaulCLI

/// `-i FILE`: aria2's input-file format, parsed and checked before any download.
extension CommandLineOptions {
  /// The options of a command line that asks for a download.
  static func parseDownload(_ arguments: [String]) throws -> CommandLineOptions {
    guard case .download(let options) = try parse(arguments) else {
      throw UsageError("\(arguments) is not a download")
    }
    return options
  }
}

@Suite("input files")
struct InputFileTests {
  private func parse(_ text: String) throws(UsageError) -> [InputFile.Entry] {
    try InputFile.parse(text, name: "urls.txt")
  }

  private func error(_ text: String) -> String? {
    do {
      _ = try parse(text)
      return nil
    } catch {
      return error.message
    }
  }

  @Test func commentsAndBlankLines() throws {
    let text = """
      # mirrors
      http://h/a
      \r
      http://h/b  \r
      #http://h/c
      http://h/d # the fourth, with a comment
      http://h/e#section
      http://h/f\t# after a tab
         # an indented comment
      http://h/g?q=1&r=#frag  #
      """
    #expect(
      try parse(text).map(\.url) == [
        "http://h/a", "http://h/b", "http://h/d", "http://h/e#section", "http://h/f",
        "http://h/g?q=1&r=#frag",
      ])
    #expect(try parse(text).map(\.line) == [2, 4, 6, 7, 8, 10])
    #expect(try parse("").isEmpty && parse("# only\n\n").isEmpty)
  }

  @Test func optionLinesBelongToTheURLAbove() throws {
    let hex = String(repeating: "ab", count: 32)
    let entries = try parse(
      """
      http://h/a
        out=renamed.iso
        dir=isos/debian
      \tchecksum=sha-256=\(hex)
        header=X-Token: abc # not a comment? it is: a blank then '#'
        header=Accept: */*
        split=8
        max-connection-per-server=4
        max-download-limit=500K
        max-tries=0
        timeout=2.5
        allow-overwrite=true

      http://h/b
        max-download-limit=0
        max-tries=3
      http://h/c
        split=2
      """)
    #expect(entries.map(\.url) == ["http://h/a", "http://h/b", "http://h/c"])
    let a = entries[0].options
    #expect(a.output == "renamed.iso" && a.directory == "isos/debian")
    #expect(a.checksum?.description == "sha-256=\(hex)")
    #expect(a.headers == [.init(name: "X-Token", value: "abc"), .init(name: "Accept", value: "*/*")])
    #expect(a.split == 8 && a.connectionsPerServer == 4 && a.connections == 4)
    #expect(a.rateLimit == 500 * 1024 && a.maxAttempts == Int.max && a.timeout == 2.5 && a.overwrite == true)
    #expect(entries[1].options.rateLimit == 0 && entries[1].options.maxAttempts == 3)
    #expect(entries[1].options.connections == nil && entries[1].options.output == nil)
    #expect(entries[2].options.connections == 2)
  }

  @Test(
    arguments: [
      (
        "  out=x\nhttp://h/a",
        "urls.txt:1: 'out=x' is indented, but no URL comes before it (options follow their URL)"
      ),
      (
        "http://h/a\n  bogus=1",
        "urls.txt:2: unknown option 'bogus' (haul takes out, dir, checksum, header, split, max-connection-per-server, max-download-limit, max-tries, timeout, allow-overwrite)"
      ),
      (
        "http://h/a\n  user-agent=x",
        "urls.txt:2: unknown option 'user-agent' (haul takes out, dir, checksum, header, split, max-connection-per-server, max-download-limit, max-tries, timeout, allow-overwrite)"
      ),
      ("http://h/a\n  splt=2", "urls.txt:2: unknown option 'splt' (did you mean 'split'?)"),
      (
        "http://h/a\n  out",
        "urls.txt:2: 'out' is not an option (indented lines below a URL are NAME=VALUE, e.g. out=file.iso)"
      ),
      (
        "http://h/a\n  http://h/b",
        "urls.txt:2: 'http://h/b' is indented, so it would be an option of the URL above; start a URL at the beginning of its line"
      ),
      (
        "http://h/a http://h/b",
        "urls.txt:1: more than one URL on a line ('http://h/a', 'http://h/b'); haul takes one URL per line (a comment starts with ' #')"
      ),
      (
        "http://h/a\nnotaurl",
        "urls.txt:2: 'notaurl' is not a URL (give a full URL such as https://example.com/file)"
      ),
      (
        "gopher://h/a",
        "urls.txt:1: unsupported URL scheme 'gopher' (haul downloads http://, https://, ftp://, ftps:// and sftp:// URLs)"
      ),
      ("# comment\nhttp://", "urls.txt:2: 'http://' has no usable host name"),
      ("http://h/a\nhttps://:443/x", "urls.txt:2: 'https://:443/x' has no usable host name"),
      ("http://h/a\n  out=", "urls.txt:2: out: the file name is empty"),
      (
        "http://h/a\n  out=/etc/passwd",
        "urls.txt:2: out: '/etc/passwd' is absolute; out= names a file inside the directory (use dir= too)"
      ),
      (
        "http://h/a\n  out=../up.iso",
        "urls.txt:2: out: '../up.iso' does not name a file inside the directory"
      ),
      ("http://h/a\n  out=a\n  out=b", "urls.txt:3: out= is given twice for the URL on line 1"),
      ("http://h/a\n  dir=", "urls.txt:2: dir: the directory name is empty"),
      ("http://h/a\n  split=0", "urls.txt:2: split: '0' is not a number from 1 to 64"),
      (
        "http://h/a\n  max-connection-per-server=x",
        "urls.txt:2: max-connection-per-server: 'x' is not a number from 1 to 64"
      ),
      (
        "http://h/a\n  max-download-limit=fast",
        "urls.txt:2: max-download-limit: 'fast' is not a rate (examples: 500K, 2M, 0 for no limit)"
      ),
      ("http://h/a\n  max-tries=-1", "urls.txt:2: max-tries: '-1' is not a whole number (0 for no limit)"),
      ("http://h/a\n  timeout=0", "urls.txt:2: timeout: '0' is not a positive number of seconds"),
      ("http://h/a\n  allow-overwrite=yes", "urls.txt:2: allow-overwrite: 'yes' is neither true nor false"),
      (
        "http://h/a\n  header=NoColon",
        "urls.txt:2: header: 'NoColon' is not a header (expected 'Name: value')"
      ),
      (
        "http://h/a\n  checksum=crc32=00",
        "urls.txt:2: checksum: 'crc32=00' is not a checksum (write ALGO=HEX with ALGO one of sha-256, sha-512, sha-1, md5)"
      ),
    ] as [(String, String)])
  func mistakesNameTheFileAndLine(text: String, message: String) {
    #expect(error(text) == message)
  }

  @Test func jobsTakeTheLineOptionsOverTheCommandLine() throws {
    let options = try CommandLineOptions.parseDownload([
      "-d", "dl", "-x", "2", "--limit-rate", "1M", "-H", "A: 1", "--retries", "5", "http://h/first",
    ])
    let entries = try parse(
      """
      http://h/a.iso
        out=sub/renamed.iso
        header=B: 2
        split=8
        max-download-limit=0
      http://h/b.iso
        dir=elsewhere/
        max-tries=0
      """)
    let jobs = BatchPlan.jobs(options, entries: [InputFile.Entry(url: "http://h/first", line: 0)] + entries)
    #expect(jobs.map(\.source) == ["http://h/first", "http://h/a.iso", "http://h/b.iso"])
    #expect(jobs[0].destination == .directory(URL(fileURLWithPath: "dl", isDirectory: true)))
    #expect(jobs[0].options.connections == 2 && jobs[0].options.rateLimit == 1 << 20)
    #expect(jobs[0].options.maxAttemptsWithoutProgress == 6 && jobs[0].directory == "dl")
    #expect(jobs[1].destination == .file(URL(fileURLWithPath: "dl/sub/renamed.iso")))
    #expect(jobs[1].directory == "dl/sub")
    #expect(jobs[1].options.connections == 8 && jobs[1].options.rateLimit == nil)
    #expect(jobs[1].options.headers.map { "\($0.name): \($0.value)" } == ["A: 1", "B: 2"])
    #expect(jobs[2].destination == .directory(URL(fileURLWithPath: "elsewhere/", isDirectory: true)))
    #expect(jobs[2].options.maxAttemptsWithoutProgress == Int.max && jobs[2].options.connections == 2)
    #expect(BatchPlan.directories(of: jobs) == ["dl", "dl/sub", "elsewhere/"])
  }

  /// The command line's URLs of a batch go through a download's URL check before anything else
  /// (the input file is not even read), named when the message does not quote them.
  @Test(arguments: [
    (["http://h/a", "notaurl"], "'notaurl' is not a URL (give a full URL such as https://example.com/file)"),
    (
      ["gopher://h/x", "http://h/a"],
      "gopher://h/x: unsupported URL scheme 'gopher' (haul downloads http://, https://, ftp://, ftps:// and sftp:// URLs)"
    ),
    (["http://h/a", "http://", "also bad"], "'http://' has no usable host name"),
    (["https://:443/x", "-i", "-"], "'https://:443/x' has no usable host name"),
  ])
  func badCommandLineURLsAreRefusedFirst(arguments: [String], message: String) throws {
    let options = try CommandLineOptions.parseDownload(arguments)
    #expect(throws: HaulError(.invalidInput, message)) {
      try BatchPlan.entries(
        options,
        readStandardInput: { () throws(LocalFileError) -> [UInt8] in
          Issue.record("standard input was read")
          return []
        })
    }
  }

  /// The same URL with the same options of its own is one entry; with others, another.
  @Test func repeatedEntriesAreTakenOnce() throws {
    let options = try CommandLineOptions.parseDownload(["http://h/a", "http://h/a", "http://h/b", "-i", "-"])
    let text = "http://h/b\nhttp://h/a\n  out=other.bin\nhttp://h/a\n"
    let entries = try BatchPlan.entries(options, readStandardInput: { Array(text.utf8) })
    let (kept, notes) = BatchPlan.withoutRepeats(entries, options: options)
    #expect(kept.map(\.url) == ["http://h/a", "http://h/b", "http://h/a"])
    #expect(kept.map(\.options.output) == [nil, nil, "other.bin"])
    #expect(
      notes == [
        "http://h/a is listed more than once with the same options; it is downloaded once",
        "http://h/b is listed more than once with the same options; it is downloaded once",
      ])
  }

  @Test func entriesFromTheCommandLineAndStandardInput() throws {
    let options = try CommandLineOptions.parseDownload(["http://h/x", "-i", "-"])
    let text = "# mirrors\nhttp://h/a\n  out=a.bin\nhttp://h/b # second\n"
    let entries = try BatchPlan.entries(options, readStandardInput: { Array(text.utf8) })
    #expect(entries.map(\.url) == ["http://h/x", "http://h/a", "http://h/b"])
    #expect(entries[1].options.output == "a.bin")
    #expect(
      throws: HaulError(
        .invalidInput,
        "stdin:2: 'bogus' is not an option (indented lines below a URL are NAME=VALUE, e.g. out=file.iso)")
    ) { try BatchPlan.entries(options, readStandardInput: { Array("http://h/a\n bogus\n".utf8) }) }
    let none = try CommandLineOptions.parseDownload(["-i", "-"])
    let listed = try BatchPlan.entries(none, readStandardInput: { Array("# none\n".utf8) })
    #expect(listed.isEmpty)
    #expect(
      BatchPlan.withoutRepeats(listed, options: none).notes == ["standard input lists no URL: nothing to do"])
    #expect(
      throws: HaulError(
        .fileSystem, "cannot read the input file /nonexistent/urls: No such file or directory")
    ) { try BatchPlan.entries(try CommandLineOptions.parseDownload(["-i", "/nonexistent/urls"])) }
    #expect(throws: HaulError(.fileSystem, "the input file / is a directory")) {
      try BatchPlan.entries(try CommandLineOptions.parseDownload(["-i", "/"]))
    }
  }
}
