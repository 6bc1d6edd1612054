import Foundation
import HaulTestSupport
import Testing

/// A file at the catalog's path that is not a Haul catalog is refused by every subcommand
/// with a message that says so, and left exactly as it was.
@Suite("catalog refusals")
struct CatalogRefusalTests {
  /// Every subcommand that reads or opens the catalog, with arguments it would otherwise take.
  static let commands: [(String, [String])] = [
    ("ls", []), ("ls", ["--json"]), ("add", ["http://127.0.0.1:9/a"]), ("pause", ["--all"]),
    ("resume", ["--all"]), ("rm", ["00000000"]), ("run", []),
  ]

  private func expectRefused(_ fixture: CatalogFixture, _ reason: String) async throws {
    let before = try Data(contentsOf: fixture.catalog)
    let entries = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).sorted()
    for (name, arguments) in Self.commands {
      let outcome = try await fixture.run(name, arguments)
      #expect(outcome.status == 3, "\(name): \(outcome)")
      #expect(outcome.stderr.contains("\(fixture.catalog.path) \(reason)"), "\(name): \(outcome)")
      #expect(
        outcome.stderr.contains("Haul leaves it as it is") || outcome.stderr.contains("left it as it is"))
      #expect(try Data(contentsOf: fixture.catalog) == before, "\(name) left the file as it was")
    }
    // No log, lock or socket was made beside it by a refused open... except the lock, which is
    // taken before the file is looked at (it names the owner for the next process).
    let after = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).sorted()
    #expect(after.filter { !entries.contains($0) }.allSatisfy { $0 == "catalog.sqlite.lock" }, "\(after)")
  }

  /// A dangling symbolic link at the catalog's name is refused by every subcommand alike (run
  /// too, which once took it for a missing catalog), and nothing is made where it points.
  @Test func aDanglingLinkIsRefusedByEverySubcommand() async throws {
    let fixture = try CatalogFixture()
    let target = fixture.directory.file("elsewhere/catalog.sqlite").path
    try FileManager.default.createSymbolicLink(atPath: fixture.catalog.path, withDestinationPath: target)
    for (name, arguments) in Self.commands {
      let outcome = try await fixture.run(name, arguments)
      #expect(outcome.status == 3, "\(name): \(outcome)")
      #expect(
        outcome.stderr.contains(
          "\(fixture.catalog.path) is a symbolic link; haul does not write through links"),
        "\(name): \(outcome)")
      #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fixture.catalog.path) == target)
    }
    #expect(!fixture.directory.exists("elsewhere"))
  }

  /// A mistyped --catalog: the subcommands that change or list a catalog say there is none, exit
  /// 3 as for a missing input file, and make nothing; only add makes a catalog.
  @Test func aMissingCatalogIsSaidAndNotMade() async throws {
    let fixture = try CatalogFixture()
    let commands: [(String, [String])] = [
      ("ls", []), ("ls", ["--json"]), ("pause", ["--all"]), ("resume", ["--all"]), ("pause", ["abcd"]),
      ("resume", ["abcd"]), ("rm", ["abcd"]),
    ]
    for (name, arguments) in commands {
      let outcome = try await fixture.run(name, arguments)
      #expect(outcome.status == 3, "\(name): \(outcome)")
      #expect(
        outcome.stderr
          == "haul: no catalog at \(fixture.catalog.path)\nhaul: check the path; haul add --catalog "
          + "\(fixture.catalog.path) URL makes a catalog there\n", "\(name): \(outcome)")
      let entries = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path)
      #expect(entries.isEmpty, "\(name) made \(entries)")
    }
    _ = try await fixture.add(["http://127.0.0.1:9/a"])
    #expect(fixture.directory.exists("catalog.sqlite"))
  }

  @Test func garbageIsRefused() async throws {
    let fixture = try CatalogFixture()
    try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: fixture.catalog)
    try await expectRefused(fixture, "is not a Haul catalog (not an SQLite database)")
  }

  @Test func anotherProgramsDatabaseIsRefused() async throws {
    let fixture = try CatalogFixture()
    let python = try #require(
      TestEnvironment.executable("/usr/bin/python3"), "python3 makes the foreign database")
    let made = try TestEnvironment.runTool(
      python.path,
      [
        "-c",
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
          + "c.execute('CREATE TABLE notes (body TEXT)'); c.execute(\"INSERT INTO notes VALUES ('mine')\"); "
          + "c.commit(); c.close()",
        fixture.catalog.path,
      ])
    #expect(made.status == 0, "\(made)")
    try await expectRefused(fixture, "is an SQLite database of another program")
  }

  @Test func aTruncatedCatalogIsRefused() async throws {
    let fixture = try CatalogFixture()
    _ = try await fixture.add(["http://127.0.0.1:9/a"])
    let whole = try Data(contentsOf: fixture.catalog)
    // Only the header page survives: the schema it points to is gone.
    try whole.prefix(100).write(to: fixture.catalog)
    let outcome = try await fixture.run("ls")
    #expect(outcome.status == 3, "\(outcome)")
    #expect(outcome.stderr.contains("catalog"), "\(outcome)")
    #expect(try Data(contentsOf: fixture.catalog) == whole.prefix(100))
  }
}
