import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulCLI

/// Two URLs of one run that would write one file: refused before any request, or numbered.
@Suite("name collisions")
struct NameCollisionsTests {
  private func jobs(_ arguments: [String], list: String = "") throws -> [DownloadJob] {
    let options = try CommandLineOptions.parseDownload(arguments)
    let entries = try BatchPlan.entries(options, readStandardInput: { Array(list.utf8) })
    return BatchPlan.jobs(options, entries: entries)
  }

  @Test(
    arguments: [
      ("small.bin", 1, "small.1.bin"), ("archive.tar.gz", 2, "archive.tar.2.gz"), ("README", 1, "README.1"),
      (".bashrc", 1, ".bashrc.1"), ("name.", 3, "name..3"), ("index.html", 10, "index.10.html"),
    ] as [(String, Int, String)])
  func numberedNames(name: String, number: Int, expected: String) {
    #expect(NameCollisions.numbered(name, number) == expected)
  }

  @Test func aNumberedNameStaysShortEnough() {
    let long = String(repeating: "a", count: FileNameSanitizer.maximumBytes - 4) + ".bin"
    let numbered = NameCollisions.numbered(long, 12)
    #expect(numbered.utf8.count == FileNameSanitizer.maximumBytes && numbered.hasSuffix("a.12.bin"))
  }

  @Test func sameFileIsRefusedNamingTheURLsAndTheFile() throws {
    let planned = try jobs(
      ["-d", "isos", "http://h/small.bin", "http://h/slow/small.bin", "http://h/other.bin", "-i", "-"],
      list: "http://h/a\n  out=other.bin\nhttp://h/b?x=1\n  dir=isos/\n  out=./small.bin\n")
    #expect(
      throws: HaulError(
        .invalidInput,
        """
        3 URLs would be saved as isos/small.bin:
          http://h/small.bin
          http://h/slow/small.bin
          http://h/b?x=1
        2 URLs would be saved as isos/other.bin:
          http://h/other.bin
          http://h/a
        """,
        hint:
          "give each its own name (out= in an input file), or --auto-rename to number the later ones "
          + "(small.1.bin; a name the server gives still wins)"
      )
    ) { try NameCollisions.resolve(planned, autoRename: false) }
    // Names that only `out=` gives are certain: no word of a server's.
    let named = try jobs(["-i", "-"], list: "http://h/a\n  out=x.bin\nhttp://h/b\n  out=x.bin\n")
    #expect(
      throws: HaulError(
        .invalidInput, "2 URLs would be saved as x.bin:\n  http://h/a\n  http://h/b",
        hint:
          "give each its own name (out= in an input file), or --auto-rename to number the later ones (x.1.bin)"
      )
    ) { try NameCollisions.resolve(named, autoRename: false) }
    let distinct = try jobs(
      ["http://h/a/x.bin", "http://h/b/y.bin", "-d", "d", "-i", "-"], list: "http://h/x.bin\n  dir=e\n")
    let resolved = try NameCollisions.resolve(distinct, autoRename: false)
    #expect(resolved.renamed.isEmpty && resolved.jobs.map(\.destination) == distinct.map(\.destination))
  }

  @Test func autoRenameNumbersTheLaterOnesAndSkipsNamesOthersAskedFor() throws {
    let planned = try jobs(
      ["--auto-rename", "http://h/small.bin", "http://h/slow/small.bin", "-i", "-"],
      list: "http://h/c\n  out=small.1.bin\nhttp://h/x/small.bin\nhttp://h/\nhttp://h/y/\n")
    let (jobs, renamed) = try NameCollisions.resolve(planned, autoRename: true)
    #expect(
      renamed == [
        .init(
          source: "http://h/slow/small.bin", file: "small.2.bin", keptBy: "http://h/small.bin",
          unlessServerNames: true),
        .init(
          source: "http://h/x/small.bin", file: "small.3.bin", keptBy: "http://h/small.bin",
          unlessServerNames: true),
        .init(source: "http://h/y/", file: "index.1.html", keptBy: "http://h/", unlessServerNames: true),
      ])
    // Directory downloads keep their directory: the number replaces only the URL's name.
    let here = DownloadDestination.directory(URL(fileURLWithPath: ".", isDirectory: true))
    #expect(
      jobs.map(\.destination) == [here, here, .file(URL(fileURLWithPath: "./small.1.bin")), here, here, here])
    #expect(
      jobs.map(\.options.fallbackFileName) == [nil, "small.2.bin", nil, "small.3.bin", nil, "index.1.html"])
  }

  /// An `out=` name another URL took first is numbered as a file: no server can rename it.
  @Test func autoRenameNumbersAnOutNameAsAFile() throws {
    let planned = try jobs(["--auto-rename", "-i", "-"], list: "http://h/x.bin\nhttp://h/b\n  out=x.bin\n")
    let (jobs, renamed) = try NameCollisions.resolve(planned, autoRename: true)
    #expect(renamed == [.init(source: "http://h/b", file: "x.1.bin", keptBy: "http://h/x.bin")])
    #expect(jobs[1].destination == .file(URL(fileURLWithPath: "./x.1.bin")))
    #expect(jobs[1].options.fallbackFileName == nil)
  }

  @Test func pathsThatNameOneFileHaveOneKey() throws {
    let directory = try TemporaryDirectory()
    let real = directory.file("real").path
    try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: false)
    try FileManager.default.createSymbolicLink(atPath: directory.file("link").path, withDestinationPath: real)
    // One set of keys, as a run uses it: a directory seen again comes from its cache.
    var keys = NameCollisions.DirectoryKeys()
    let key = keys.key(directory: real, name: "f")
    #expect(keys.key(directory: real, name: "g") == real + "/g")
    #expect(keys.key(directory: directory.file("link").path, name: "f") == key)
    #expect(keys.key(directory: real + "/./sub/..//", name: "f") == key)
    #expect(
      keys.key(directory: directory.file("link/missing/deeper").path, name: "f") == real
        + "/missing/deeper/f")
    #expect(keys.key(directory: "/", name: "f") == "/f")
    #expect(keys.key(directory: ".", name: "f") == FileManager.default.currentDirectoryPath + "/f")
  }
}
