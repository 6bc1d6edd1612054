import Foundation
import HaulTestSupport
import Testing

/// `haul URL URL…` and `haul -i FILE`: the real binary against the fault server.
@Suite struct BatchEndToEndTests {
  static func serve(_ count: Int, on server: TestServer, seed: UInt64) -> [[UInt8]] {
    (0..<count).map { index in
      let body = TestResource.random(size: 50_000 + index * 1_000, seed: seed + UInt64(index))
      server.setResource("/d/f\(index).bin", TestResource(body: body, etag: "\"\(index)\""))
      return body
    }
  }

  @Test func severalURLsAllArriveAndEachIsReported() async throws {
    let server = try TestServer()
    let bodies = Self.serve(6, on: server, seed: 80)
    let directory = try TemporaryDirectory()
    let urls = (0..<6).map { server.url("/d/f\($0).bin") }
    let result = try await CommandEndToEndTests.run(["-j", "3", "-d", "out"] + urls, in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("out/f\(index).bin"), body)
      #expect(same, "f\(index).bin differs")
    }
    #expect(result.stderr.components(separatedBy: "✓ saved").count - 1 == 6)
    #expect(result.stderr.contains("haul: 6 URLs: 6 done"))
  }

  @Test func anInputFileWithAFailureKeepsTheOthersAndExitsWithIt() async throws {
    let server = try TestServer()
    let bodies = Self.serve(3, on: server, seed: 90)
    let directory = try TemporaryDirectory()
    let list = [
      "# three files and a missing one", server.url("/d/f0.bin"), "", server.url("/nope.bin"),
      server.url("/d/f1.bin") + "  ", server.url("/d/f2.bin"),
    ].joined(separator: "\n")
    try Data(list.utf8).write(to: directory.file("urls.txt"))
    let result = try await CommandEndToEndTests.run(["-i", "urls.txt"], in: directory.url)
    #expect(result.status == 8, "\(result.stderr)")
    #expect(result.stderr.contains("nope.bin") && result.stderr.contains("404"))
    #expect(result.stderr.contains("haul: 4 URLs: 3 done, 1 failed"))
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("f\(index).bin"), body)
      #expect(same, "f\(index).bin differs")
    }
    #expect(!FileManager.default.fileExists(atPath: directory.file("nope.bin").path))
    // A rerun finds every finished file complete and fetches nothing again.
    let sentBefore = server.bodyBytesSent(for: "/d/f0.bin")
    let again = try await CommandEndToEndTests.run(
      ["-q", server.url("/d/f0.bin"), server.url("/d/f1.bin")], in: directory.url)
    #expect(again.status == 0 && again.stderr.isEmpty)
    #expect(server.bodyBytesSent(for: "/d/f0.bin") == sentBefore)
  }

  /// `-q` shows a batch's failures (from the error `run()` throws, no event reader) and its
  /// closing line, nothing about the files that arrived.
  @Test func quietShowsOnlyTheFailuresAndTheClosingLine() async throws {
    let server = try TestServer()
    let bodies = Self.serve(2, on: server, seed: 140)
    let directory = try TemporaryDirectory()
    let result = try await CommandEndToEndTests.run(
      ["-q", "-j", "2", server.url("/d/f0.bin"), server.url("/nope.bin"), server.url("/d/f1.bin")],
      in: directory.url)
    #expect(result.status == 8, "\(result.stderr)")
    let lines = result.stderr.split(separator: "\n")
    #expect(
      lines.first == "haul: \(server.url("/nope.bin")): the server answered 404 Not Found", "\(result.stderr)"
    )
    #expect(lines.last == "haul: 3 URLs: 2 done, 1 failed", "\(result.stderr)")
    #expect(!result.stderr.contains("f0.bin") && !result.stderr.contains("saved"), "\(result.stderr)")
    for (index, body) in bodies.enumerated() {
      #expect(CommandEndToEndTests.holds(directory.file("f\(index).bin"), body), "f\(index).bin differs")
    }
  }

  @Test func inputFileCommentsAndPerLineOptions() async throws {
    let server = try TestServer()
    let bodies = Self.serve(3, on: server, seed: 120)
    server.setResource(
      "/secret", TestResource(body: bodies[0], faults: TestFaults(requireAuthorization: "Bearer x")))
    let directory = try TemporaryDirectory()
    let wrong = "sha-256=" + String(repeating: "0", count: 64)
    let list = """
      # aria2's format: options on indented lines below their URL
      \(server.url("/d/f0.bin"))   # a comment after the URL
      \(server.url("/d/f1.bin"))
        out=renamed.bin
        dir=sub/deeper
        split=2
        max-download-limit=10M
      \(server.url("/secret"))\t# sent with its own header
        header=Authorization: Bearer x
      \(server.url("/d/f2.bin"))
        checksum=\(wrong)
      """
    try Data(list.utf8).write(to: directory.file("urls.txt"))
    let result = try await CommandEndToEndTests.run(["-i", "urls.txt"], in: directory.url)
    #expect(result.status == 9, "\(result.stderr)")
    #expect(server.requests(for: "/d/f0.bin").allSatisfy { $0.path == "/d/f0.bin" }, "\(server.requests)")
    do {
      let same = CommandEndToEndTests.holds(directory.file("f0.bin"), bodies[0])
      #expect(same, "f0.bin differs")
    }
    do {
      let same = CommandEndToEndTests.holds(directory.file("sub/deeper/renamed.bin"), bodies[1])
      #expect(same, "renamed.bin differs")
    }
    #expect(!directory.exists("f1.bin"))
    do {
      let same = CommandEndToEndTests.holds(directory.file("secret"), bodies[0])
      #expect(same, "secret differs")
    }
    #expect(server.requests(for: "/secret").allSatisfy { $0.header("Authorization") == "Bearer x" })
    #expect(server.requests(for: "/d/f0.bin").allSatisfy { $0.header("Authorization") == nil })
    #expect(result.stderr.contains("f2.bin: sha-256 mismatch"), "\(result.stderr)")
    #expect(!directory.exists("f2.bin"))
    #expect(result.stderr.contains("haul: 4 URLs: 3 done, 1 failed"))
  }

  @Test func aMistakeInTheInputFileStopsBeforeAnyDownload() async throws {
    let server = try TestServer()
    _ = Self.serve(2, on: server, seed: 130)
    let directory = try TemporaryDirectory()
    let list = "\(server.url("/d/f0.bin"))\n  out=first.bin\n\(server.url("/d/f1.bin"))\n  bogus=1\n"
    try Data(list.utf8).write(to: directory.file("urls.txt"))
    for arguments in [["-i", "urls.txt"], ["-d", "new", "-i", "urls.txt"]] {
      let result = try await CommandEndToEndTests.run(arguments, in: directory.url)
      #expect(result.status == 2)
      #expect(
        result.stderr.hasPrefix("haul: urls.txt:4: unknown option 'bogus' (haul takes out, dir, checksum, "),
        "\(result.stderr)")
      #expect(result.stderr.hasSuffix("\nTry 'haul --help'.\n"))
    }
    #expect(server.requests.isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["urls.txt"])
  }

  @Test(arguments: ["notaurl", "gopher://h/x", "http://"])
  func aBadURLInTheInputFileStopsBeforeAnyDownload(line: String) async throws {
    let server = try TestServer()
    _ = Self.serve(1, on: server, seed: 135)
    let directory = try TemporaryDirectory()
    try Data("\(server.url("/d/f0.bin"))\n\(line)\n".utf8).write(to: directory.file("urls.txt"))
    let result = try await CommandEndToEndTests.run(["-i", "urls.txt"], in: directory.url)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.hasPrefix("haul: urls.txt:2: "), "\(result.stderr)")
    #expect(server.requests.isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["urls.txt"])
  }

  /// The command line's URLs are checked as the input file's are: a bad third URL is found
  /// before the first two download, and the run stops as for a usage error.
  @Test(arguments: [
    ("notaurl", "haul: 'notaurl' is not a URL (give a full URL such as https://example.com/file)"),
    (
      "gopher://h/x",
      "haul: gopher://h/x: unsupported URL scheme 'gopher' (haul downloads http://, https://, ftp://, ftps:// and sftp:// URLs)"
    ),
    ("http://", "haul: 'http://' has no usable host name"),
  ])
  func aBadURLOnTheCommandLineStopsBeforeAnyDownload(url: String, message: String) async throws {
    let server = try TestServer()
    _ = Self.serve(2, on: server, seed: 137)
    let directory = try TemporaryDirectory()
    let result = try await CommandEndToEndTests.run(
      ["-d", "new", server.url("/d/f0.bin"), server.url("/d/f1.bin"), url], in: directory.url)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr == message + "\nTry 'haul --help'.\n")
    #expect(server.requests.isEmpty)
    // Not even -d's directory is made.
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  /// One URL alone is no batch: its message stays the download's own, hint on a line of its own.
  @Test func aBadURLAloneKeepsTheDownloadsMessage() async throws {
    let directory = try TemporaryDirectory()
    let result = try await CommandEndToEndTests.run(["notaurl"], in: directory.url)
    #expect(result.status == 2)
    #expect(
      result.stderr
        == "haul: 'notaurl' is not a URL\nhaul: give a full URL such as https://example.com/file\n")
  }

  @Test func twoURLsForOneFileAreRefusedOrNumbered() async throws {
    let server = try TestServer()
    let first = TestResource.random(size: 40_000, seed: 140)
    let second = TestResource.random(size: 60_000, seed: 141)
    server.setResource("/small.bin", TestResource(body: first, etag: "\"a\""))
    server.setResource("/slow/small.bin", TestResource(body: second, etag: "\"b\""))
    let directory = try TemporaryDirectory()
    let list = server.url("/small.bin") + "\n" + server.url("/slow/small.bin") + "\n"
    try Data(list.utf8).write(to: directory.file("urls.txt"))

    let refused = try await CommandEndToEndTests.run(["-d", "isos", "-i", "urls.txt"], in: directory.url)
    #expect(refused.status == 2, "\(refused.stderr)")
    #expect(
      refused.stderr == """
        haul: 2 URLs would be saved as isos/small.bin:
        haul:   \(server.url("/small.bin"))
        haul:   \(server.url("/slow/small.bin"))
        haul: give each its own name (out= in an input file), or --auto-rename to number the later ones (small.1.bin; a name the server gives still wins)

        """)
    #expect(server.requests.isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["urls.txt"])

    let numbered = try await CommandEndToEndTests.run(
      ["--auto-rename", "-d", "isos", "-i", "urls.txt"], in: directory.url)
    #expect(numbered.status == 0, "\(numbered.stderr)")
    #expect(
      numbered.stderr.hasPrefix(
        "haul: saving \(server.url("/slow/small.bin")) as isos/small.1.bin unless its server names the file "
          + "(--auto-rename: \(server.url("/small.bin")) has the name)\n"), "\(numbered.stderr)")
    do {
      let same = CommandEndToEndTests.holds(directory.file("isos/small.bin"), first)
      #expect(same, "small.bin differs")
    }
    do {
      let same = CommandEndToEndTests.holds(directory.file("isos/small.1.bin"), second)
      #expect(same, "small.1.bin differs")
    }
    // The same command finds both files complete again.
    let sent = server.bodyBytesSent
    let again = try await CommandEndToEndTests.run(
      ["--auto-rename", "-d", "isos", "-i", "urls.txt"], in: directory.url)
    #expect(again.status == 0, "\(again.stderr)")
    #expect(again.stderr.components(separatedBy: "is already complete").count == 3, "\(again.stderr)")
    #expect(server.bodyBytesSent == sent)
  }

  /// `download?id=1`, `download?id=2`: one name from their URLs, their own from the server
  /// (`Content-Disposition`). `--auto-rename` numbers only the URL's name, so each file gets the
  /// server's name and one the server does not name gets the number.
  @Test func autoRenameLeavesTheServersNamesAlone() async throws {
    let server = try TestServer()
    let bodies = (0..<3).map { TestResource.random(size: 30_000 + $0 * 1_000, seed: 150 + UInt64($0)) }
    server.setResource(
      "/one/download",
      TestResource(body: bodies[0], etag: "\"1\"", contentDisposition: "attachment; filename=\"file1.bin\""))
    server.setResource(
      "/two/download",
      TestResource(body: bodies[1], etag: "\"2\"", contentDisposition: "attachment; filename=\"file2.bin\""))
    server.setResource("/three/download", TestResource(body: bodies[2], etag: "\"3\""))
    let directory = try TemporaryDirectory()
    let arguments =
      ["--auto-rename", "-d", "out"] + ["one", "two", "three"].map { server.url("/\($0)/download") }
    let result = try await CommandEndToEndTests.run(arguments, in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    let out = directory.file("out")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == [
        "download.2", "file1.bin", "file2.bin",
      ])
    for (name, body) in zip(["file1.bin", "file2.bin", "download.2"], bodies) {
      let same = CommandEndToEndTests.holds(out.appendingPathComponent(name), body)
      #expect(same, "\(name) differs")
    }
    // The same command finds each again, whoever named it.
    let again = try await CommandEndToEndTests.run(arguments, in: directory.url)
    #expect(again.status == 0, "\(again.stderr)")
    #expect(again.stderr.components(separatedBy: "is already complete").count == 4, "\(again.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).count == 3)
  }

  /// A URL listed twice with the same options is one download (aria2c too), said once; one
  /// with an `out=` of its own is another download. An input file without URLs is nothing to
  /// do, not a mistake (aria2c and wget exit 0).
  @Test func aRepeatedURLIsDownloadedOnceAndAnEmptyListIsNothingToDo() async throws {
    let server = try TestServer()
    let bodies = Self.serve(1, on: server, seed: 142)
    let url = server.url("/d/f0.bin")
    let directory = try TemporaryDirectory()
    try Data("\(url)\n\(url)\n  out=copy.bin\n".utf8).write(to: directory.file("urls.txt"))
    let result = try await CommandEndToEndTests.run(
      ["-d", "got", url, url, "-i", "urls.txt"], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr.hasPrefix(
        "haul: \(url) is listed more than once with the same options; it is downloaded once\n"),
      "\(result.stderr)")
    #expect(result.stderr.components(separatedBy: "more than once").count == 2, "\(result.stderr)")
    #expect(server.requests(for: "/d/f0.bin").count == 2, "f0.bin and copy.bin")
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.file("got").path).sorted()
    #expect(names == ["copy.bin", "f0.bin"])
    #expect(CommandEndToEndTests.holds(directory.file("got/copy.bin"), bodies[0]))

    try Data("# nothing yet\n".utf8).write(to: directory.file("empty.txt"))
    let empty = try await CommandEndToEndTests.run(["-d", "none", "-i", "empty.txt"], in: directory.url)
    #expect(empty.status == 0, "\(empty.stderr)")
    #expect(empty.stderr == "haul: empty.txt lists no URL: nothing to do\n")
    #expect(!FileManager.default.fileExists(atPath: directory.file("none").path))
  }

  @Test func jsonLinesNameTheirSource() async throws {
    let server = try TestServer()
    _ = Self.serve(2, on: server, seed: 100)
    let directory = try TemporaryDirectory()
    let urls = [server.url("/d/f0.bin"), server.url("/d/f1.bin")]
    let result = try await CommandEndToEndTests.run(["--json"] + urls, in: directory.url)
    #expect(result.status == 0)
    let events = try result.stdout.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    let completed = events.filter { $0["event"] as? String == "completed" }
    #expect(Set(completed.compactMap { $0["source"] as? String }) == Set(urls))
    #expect(events.allSatisfy { urls.contains($0["source"] as? String ?? "") })
  }

  @Test func ctrlCStopsEveryDownloadAndTheSameCommandResumes() async throws {
    let server = try TestServer()
    let bodies = (0..<3).map { TestResource.random(size: 2_000_000, seed: 110 + UInt64($0)) }
    for (index, body) in bodies.enumerated() {
      server.setResource(
        "/s\(index)", TestResource(body: body, etag: "\"s\"", faults: TestFaults(stallAfterBytes: 500_000)))
    }
    let directory = try TemporaryDirectory()
    let urls = (0..<3).map { server.url("/s\($0)") }
    let haul = try CommandEndToEndTests.HaulProcess(
      ["-x", "1", "--timeout", "600"] + urls, in: directory.url)
    for index in 0..<3 {
      try await CommandEndToEndTests.waitForState(directory.file("s\(index).haul"), of: haul)
    }
    haul.signal(SIGINT)
    #expect(await haul.wait() == 130)
    #expect(haul.stderr.contains("run the same command again to resume"))
    for index in 0..<3 { server.updateFaults("/s\(index)") { $0.stallAfterBytes = nil } }
    let again = try await CommandEndToEndTests.run(["-x", "1"] + urls, in: directory.url)
    #expect(again.status == 0, "\(again.stderr)")
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("s\(index)"), body)
      #expect(same, "s\(index) differs")
    }
  }
}
