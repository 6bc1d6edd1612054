import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul add`, `ls`, `pause`, `resume` and `rm` on a catalog no process owns, through the real
/// binary (nothing here touches the network: the URLs point at a closed port).
@Suite("manager subcommands")
struct SubcommandTests {
  static let nowhere = "http://127.0.0.1:9"

  @Test func addListsIdsAndLsShowsThemInOrder() async throws {
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-d", "out", "\(Self.nowhere)/a.bin", "\(Self.nowhere)/dir/b.iso"])
    #expect(ids.count == 2)
    #expect(ids.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) })
    let listed = try await fixture.list()
    #expect(listed.map { $0["id"] } == ids)
    #expect(listed.map { $0["state"] } == ["queued", "queued"])
    #expect(listed.map { $0["url"] } == ["\(Self.nowhere)/a.bin", "\(Self.nowhere)/dir/b.iso"])
    #expect(listed.allSatisfy { $0["bytes"] == "0" && $0["total"] == "null" && $0["error"] == "null" })
    #expect(listed.map { $0["queue_index"] } == ["0", "1"])
    #expect(fixture.directory.exists("out"), "-d makes the directory, as haul URL does")

    let table = try await fixture.run("ls")
    #expect(table.status == 0)
    let lines = table.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first?.hasPrefix("ID                STATE") == true, "\(lines)")
    #expect(lines.count == 3)
    #expect(lines[1].hasPrefix(ids[0] + "  queued") && lines[1].hasSuffix("a.bin"), "\(lines)")
    #expect(lines[2].hasSuffix("b.iso"))

    // --position 0 puts it first; --paused adds it paused.
    let first = try await fixture.add(["--position", "0", "--paused", "-o", "first.bin", "\(Self.nowhere)/c"])
    let reordered = try await fixture.list()
    #expect(reordered.map { $0["id"] } == first + ids)
    #expect(reordered.first?["state"] == "paused")
    #expect(reordered.first?["file"] == fixture.directory.file("first.bin").path)
  }

  @Test func pauseResumeAndRemoveTakePrefixesAndRefuseWrongIds() async throws {
    let fixture = try CatalogFixture()
    let ids = try await fixture.add([
      "\(Self.nowhere)/a.bin", "\(Self.nowhere)/b.bin", "\(Self.nowhere)/c.bin",
    ])
    let paused = try await fixture.run("pause", [String(ids[0].prefix(6)), ids[1].uppercased()])
    #expect(paused.status == 0, "\(paused)")
    #expect(paused.stderr.contains("haul: paused \(ids[0]) (a.bin)"), "\(paused)")
    #expect(try await fixture.list().map { $0["state"] } == ["paused", "paused", "queued"])

    // One wrong id among right ones: an error, and nothing changes.
    for wrong in ["0000000000000000", "zzzz", "ab"] {
      let outcome = try await fixture.run("resume", [ids[0], wrong])
      #expect(outcome.status == 2, "\(outcome)")
      #expect(outcome.stderr.hasPrefix("haul: "), "\(outcome)")
    }
    let unknown = try await fixture.run("resume", [ids[0], "0000000000000000"])
    #expect(unknown.stderr.contains("no download has the id 0000000000000000"), "\(unknown)")
    #expect(unknown.stderr.contains("haul ls lists"), "\(unknown)")
    #expect(try await fixture.list().map { $0["state"] } == ["paused", "paused", "queued"])

    let resumed = try await fixture.run("resume", ["--all"])
    #expect(resumed.status == 0, "\(resumed)")
    #expect(try await fixture.list().map { $0["state"] } == ["queued", "queued", "queued"])
    let all = try await fixture.run("pause", ["--all"])
    #expect(all.status == 0)
    #expect(try await fixture.list().allSatisfy { $0["state"] == "paused" })

    let removed = try await fixture.run("rm", [String(ids[1].prefix(8))])
    #expect(removed.status == 0, "\(removed)")
    #expect(try await fixture.list().map { $0["id"] } == [ids[0], ids[2]])

    // Usage mistakes say what to do.
    let neither = try await fixture.run("pause")
    #expect(neither.status == 2)
    #expect(neither.stderr.contains("Give their ids or --all"), "\(neither)")
    let both = try await fixture.run("pause", ["--all", ids[0]])
    #expect(both.status == 2)
    #expect(both.stderr.contains("not both"))
  }

  @Test func aPrefixNoIdStartsWithIsRefused() async throws {
    let fixture = try CatalogFixture()
    let ids = try await fixture.add((0..<3).map { "\(Self.nowhere)/f\($0)" })
    let taken = Set(ids.map { $0.prefix(4) })
    let free =
      (0..<65536).lazy.map { String(format: "%04x", $0) }.first { !taken.contains($0[...]) } ?? "ffff"
    let outcome = try await fixture.run("rm", [free])
    #expect(outcome.status == 2)
    #expect(outcome.stderr.contains("no download's id starts with \(free)"), "\(outcome)")
    #expect(try await fixture.list().count == 3)
  }

  @Test func removeDeleteFilesDeletesThePartialFiles() async throws {
    let fixture = try CatalogFixture()
    let ids = try await fixture.add(["-o", "x.bin", "\(Self.nowhere)/x.bin"])
    // What an interrupted download leaves: the .part beside the target.
    try Data(repeating: 7, count: 100).write(to: fixture.directory.file("x.bin.part"))
    let kept = try await fixture.run("rm", [ids[0]])
    #expect(kept.status == 0)
    #expect(fixture.directory.exists("x.bin.part"), "rm without --delete-files keeps the files")
    let again = try await fixture.add(["-o", "x.bin", "\(Self.nowhere)/x.bin"])
    let deleted = try await fixture.run("rm", ["--delete-files", again[0]])
    #expect(deleted.status == 0, "\(deleted)")
    #expect(!fixture.directory.exists("x.bin.part"))
    #expect(try await fixture.list().isEmpty)
  }

  @Test func addTakesTheInputFileFormatAndRefusesMistakesBeforeAnyChange() async throws {
    let fixture = try CatalogFixture()
    try """
    # two files
    \(Self.nowhere)/one.iso
      out=first.iso
      dir=isos
    \(Self.nowhere)/two.iso   # a comment
      split=4
    """.write(to: fixture.directory.file("urls.txt"), atomically: true, encoding: .utf8)
    let ids = try await fixture.add(["-d", "dl", "-i", "urls.txt"])
    #expect(ids.count == 2)
    let listed = try await fixture.list()
    #expect(listed.first?["file"] == fixture.directory.file("isos/first.iso").path)
    #expect(listed.last?["file"] == "null")

    try "\(Self.nowhere)/three.iso\n  splt=2\n".write(
      to: fixture.directory.file("bad.txt"), atomically: true, encoding: .utf8)
    let bad = try await fixture.run("add", ["-i", "bad.txt"])
    #expect(bad.status == 2, "\(bad)")
    #expect(bad.stderr.contains("bad.txt:2: unknown option 'splt' (did you mean 'split'?)"), "\(bad)")
    #expect(try await fixture.list().count == 2)

    let twice = try await fixture.run("add", ["-d", "dl", "\(Self.nowhere)/two.iso"])
    #expect(twice.status == 2, "the same URL into the same directory is refused: \(twice)")
    #expect(twice.stderr.contains("already in the catalog as download \(ids[1])"), "\(twice)")
    let parallel = try await fixture.run("add", ["-j", "3", "\(Self.nowhere)/z"])
    #expect(parallel.status == 2)
    #expect(parallel.stderr.contains("unknown option '-j'"), "\(parallel)")
  }

  /// `-o -` is this terminal's standard output: a queued download, run later by another
  /// process, has none (the owner would have made a file named `-`).
  @Test func addRefusesStandardOutput() async throws {
    let fixture = try CatalogFixture()
    let refused = try await fixture.run("add", ["-o", "-", "\(Self.nowhere)/a"])
    #expect(refused.status == 2, "\(refused)")
    #expect(refused.stderr.contains("-o - writes to standard output, which a download added to the catalog"))
    #expect(refused.stderr.contains("haul -o - URL"), "\(refused)")
    #expect(!FileManager.default.fileExists(atPath: fixture.directory.file("-").path))
    #expect(try await fixture.add(["-o", "./-", "\(Self.nowhere)/a"]).count == 1, "a file named so: ./-")
  }

  @Test func theDefaultCatalogIsInTheDataHomeAndPrivate() async throws {
    let home = try TemporaryDirectory()
    let binary = try #require(BinaryTests.binary)
    let data = home.file("data").path
    // Before the first add, the default catalog lists nothing (no typo to catch) and is not made.
    for arguments in [["ls"], ["ls", "--json"]] {
      let fresh = try await ChildProcess.start(
        binary, arguments, environment: ["XDG_DATA_HOME": data], currentDirectory: home.url
      ).wait()
      #expect(fresh.status == 0 && fresh.events.isEmpty, "\(arguments): \(fresh)")
      #expect(!FileManager.default.fileExists(atPath: data + "/haul/catalog.sqlite"))
    }
    let added = try await ChildProcess.start(
      binary, ["add", "\(Self.nowhere)/a"], environment: ["XDG_DATA_HOME": data], currentDirectory: home.url
    ).wait()
    #expect(added.status == 0, "\(added)")
    var info = stat()
    #expect(stat(data + "/haul/catalog.sqlite", &info) == 0)
    #expect(stat(data + "/haul", &info) == 0 && info.st_mode & 0o777 == 0o700)
    #expect(stat(data, &info) == 0 && info.st_mode & 0o777 == 0o700)
    let listed = try await ChildProcess.start(
      binary, ["ls", "--json"], environment: ["XDG_DATA_HOME": data], currentDirectory: home.url
    ).wait()
    #expect(listed.events.count == 1, "\(listed)")

    // Without XDG_DATA_HOME (or with a relative one, which the XDG rules ignore): ~/.local/share.
    let fromHome = try await ChildProcess.start(
      binary, ["add", "\(Self.nowhere)/b"],
      environment: ["XDG_DATA_HOME": "relative", "HOME": home.url.path],
      currentDirectory: home.url
    ).wait()
    #expect(fromHome.status == 0, "\(fromHome)")
    #expect(FileManager.default.fileExists(atPath: home.file(".local/share/haul/catalog.sqlite").path))
  }

  @Test func subcommandsAreOnlyTheFirstArgument() async throws {
    let directory = try TemporaryDirectory()
    let help = try await HaulBinary.run(["--help"])
    for name in ["add", "ls", "pause", "resume", "rm", "run"] {
      #expect(help.stdout.contains("       haul \(name) "), "\(name) is in haul --help")
    }
    // After `--`, or anywhere but first, `ls` is a URL again (and not a valid one).
    for arguments in [["--", "ls"], ["-q", "ls"]] {
      let outcome = try await ChildProcess.start(
        try #require(BinaryTests.binary), arguments, currentDirectory: directory.url
      ).wait()
      #expect(outcome.status == 2, "\(arguments): \(outcome)")
      #expect(!outcome.stderr.contains("catalog"), "\(outcome)")
    }
    let subHelp = try await HaulBinary.run(["pause", "--help"])
    #expect(subHelp.status == 0)
    #expect(subHelp.stdout.hasPrefix("Usage: haul pause ID…|--all\n"), "\(subHelp)")
    let unknown = try await HaulBinary.run(["ls", "--jsno"])
    #expect(unknown.status == 2)
    #expect(
      unknown.stderr == "haul ls: unknown option '--jsno' (did you mean '--json'?)\nTry 'haul ls --help'.\n")
  }
}
