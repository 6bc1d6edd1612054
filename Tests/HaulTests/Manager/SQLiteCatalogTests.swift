import CSQLite
import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

@Suite("SQLite catalog")
struct SQLiteCatalogTests {
  static func records(_ count: Int, from first: UInt64 = 1) -> [DownloadRecord] {
    (0..<UInt64(count)).map { Queue.record(first + $0) }
  }

  /// The files in `directory` and their bytes: what "left exactly as it was" compares (a
  /// refused catalog gets no lock file, log or shared-memory file beside it either).
  static func contents(_ directory: TemporaryDirectory) throws -> [String: Data] {
    var all: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.url.path) {
      all[name] = FileManager.default.contents(atPath: directory.file(name).path)
    }
    return all
  }

  /// Opening `path` fails with a file-system error whose message contains `words`, and
  /// changes nothing in the directory; so does listing it, when `reading`.
  static func expectRefused(
    _ directory: TemporaryDirectory, _ path: String, _ words: String, reading: Bool = true
  )
    throws
  {
    let before = try contents(directory)
    do {
      _ = try SQLiteCatalog(path: path)
      Issue.record("\(path) was opened")
    } catch {
      #expect(error.category == .fileSystem, "\(error)")
      #expect(error.message.contains(words), "\(error.message)")
      #expect(error.hint?.isEmpty == false, "no hint: \(error)")
    }
    if reading {
      #expect(throws: HaulError.self) {
        try DownloadManager.read(catalog: URL(fileURLWithPath: path)) { _ in }
      }
    }
    let after = try contents(directory)
    #expect(after.keys.sorted() == before.keys.sorted(), "files appeared or went: \(after.keys.sorted())")
    #expect(after == before, "the bytes changed")
  }

  @Test func createsAWALCatalogThatReopensWithItsRecords() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    var written = Self.records(3)
    written[1].secrets = .headers
    written[1].error = StoredError(category: 4, message: "refused", hint: "later")
    written[2].destination = .directory(directory.url)
    written[2].file = nil
    do {
      let catalog = try SQLiteCatalog(path: path)
      try catalog.commit(written.map { .insert($0) })
      try catalog.commit([.position(written[0].id, 99 * QueueOrder.gap)])
    }
    let inspect = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
    #expect(try inspect.text("PRAGMA journal_mode") == "wal")
    #expect(try inspect.integer("PRAGMA application_id") == Int64(CatalogFile.applicationID))
    #expect(try inspect.integer("PRAGMA user_version") == 1)
    let reopened = try SQLiteCatalog(path: path).list()
    written[0].position = 99 * QueueOrder.gap
    #expect(reopened == [written[1], written[2], written[0]])
    let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    #expect(mode == 0o600, "the catalog holds URLs: only its owner reads it")
  }

  @Test func aSecondOwnerInThisProcessIsToldWhoHasIt() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    let first = try SQLiteCatalog(path: path)
    let error = #expect(throws: HaulError.self) { _ = try SQLiteCatalog(path: path) }
    #expect(
      error?.message.contains("already open in this process (pid \(getpid()))") == true,
      "\(String(describing: error))")
    #expect(error?.hint?.contains("close()") == true)
    withExtendedLifetime(first) {}
  }

  @Test func aCommitIsAllOrNothing() throws {
    let directory = try TemporaryDirectory()
    let catalog = try SQLiteCatalog(path: directory.file("c.sqlite").path)
    try catalog.commit([.insert(Queue.record(1))])
    #expect(throws: HaulError.self) {
      try catalog.commit([
        .insert(Queue.record(2)), .state(Queue.id(1), .paused, error: nil), .insert(Queue.record(1)),
      ])
    }
    #expect(try catalog.list() == [Queue.record(1)])
  }

  /// A transaction that need not be synced (a claim, progress numbers) commits with
  /// `synchronous = NORMAL`, and every later commit is synced again, even after one that failed.
  @Test func anUnsyncedTransactionLeavesTheNextOnesSynced() throws {
    let directory = try TemporaryDirectory()
    let connection = try SQLiteConnection(
      path: directory.file("t.sqlite").path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
    #expect(try connection.text("PRAGMA journal_mode = WAL") == "wal")
    try connection.execute("PRAGMA synchronous = FULL; CREATE TABLE t (x INTEGER)")
    let inside = try connection.transaction(durable: false) { () throws(SQLiteError) in
      try connection.execute("INSERT INTO t VALUES (1)")
      return try connection.text("PRAGMA synchronous")
    }
    #expect(inside == "1", "NORMAL while it commits")
    #expect(try connection.text("PRAGMA synchronous") == "2", "FULL again")
    #expect(throws: SQLiteError.self) {
      try connection.transaction(durable: false) { () throws(SQLiteError) in
        try connection.execute("INSERT INTO nowhere VALUES (1)")
      }
    }
    #expect(try connection.text("PRAGMA synchronous") == "2", "FULL again after a failure")
    #expect(try connection.text("SELECT count(*) FROM t") == "1")
  }

  @Test func claimsTakeTheLowestQueuedPositionsOnceAndAReopenReleasesThem() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("c.sqlite").path
    var records = Self.records(5)
    records[0].state = .paused
    records[3].position = 0
    do {
      let catalog = try SQLiteCatalog(path: path)
      try catalog.commit(records.map { .insert($0) })
      #expect(try catalog.claimNext(2).map(\.id.rawValue) == [4, 2])
      #expect(try catalog.claimNext(5).map(\.id.rawValue) == [3, 5], "claimed ones are not claimed again")
      #expect(try catalog.claimNext(1).isEmpty)
      try catalog.commit([
        .finish(Queue.id(2), RunResult(state: .queued, bytes: 5, totalBytes: 10, file: nil))
      ])
      #expect(try catalog.claimNext(3).map(\.id.rawValue) == [2], "a finished claim can be claimed again")
      #expect(try catalog.list().filter { $0.state == .active }.count == 4)
    }
    let reopened = try SQLiteCatalog(path: path)
    #expect(
      try reopened.claimNext(9).map(\.id.rawValue) == [],
      "the rows are still active: the manager requeues them")
    try reopened.commit([3, 4, 5].map { .state(Queue.id($0), .queued, error: nil) })
    #expect(
      try reopened.claimNext(9).map(\.id.rawValue) == [4, 3, 5], "the claims of the dead owner are gone")
  }

  @Test func progressIsRecordedForListing() throws {
    let directory = try TemporaryDirectory()
    let catalog = try SQLiteCatalog(path: directory.file("c.sqlite").path)
    var record = Queue.record(1)
    record.destination = .directory(directory.url)
    record.file = nil
    try catalog.commit([.insert(record)])
    try catalog.recordProgress([ProgressRecord(id: record.id, bytes: 42, totalBytes: 100, file: "/d/x")])
    try catalog.recordProgress([ProgressRecord(id: record.id, bytes: 50, totalBytes: nil, file: nil)])
    let listed = try #require(try catalog.list().first)
    #expect(listed.bytes == 50 && listed.totalBytes == nil && listed.file == "/d/x")
  }

  /// A kill or power cut in the middle of a write leaves the catalog and a log whose last frames
  /// are torn: every committed change is there, the torn one is not, and the file opens.
  @Test func aTornWriteAfterTheLastCommitLosesNothingCommitted() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    let copy = try TemporaryDirectory()
    let copied = copy.file("catalog.sqlite").path
    do {
      let catalog = try SQLiteCatalog(path: path)
      try catalog.commit(Self.records(50).map { .insert($0) })
      try catalog.commit(Self.records(50, from: 51).map { .insert($0) })
      // The files as a crash would leave them now, before any checkpoint.
      for suffix in ["", "-wal"] {
        try FileManager.default.copyItem(atPath: path + suffix, toPath: copied + suffix)
      }
      withExtendedLifetime(catalog) {}
    }
    let wal = try FileHandle(forWritingTo: URL(fileURLWithPath: copied + "-wal"))
    try wal.seekToEnd()
    try wal.write(contentsOf: Data(TestResource.random(size: 6000, seed: 9)))
    try wal.close()
    let reopened = try SQLiteCatalog(path: copied)
    #expect(try reopened.list().map(\.id.rawValue) == Array(1...100))
    try reopened.commit([.delete(Queue.id(1))])
    #expect(try reopened.list().count == 99, "and it takes changes again")
  }

  // MARK: - Refusals

  @Test(arguments: [
    (
      "garbage", Array("this is a text file, not a catalog\n".utf8) + [UInt8](repeating: 0x41, count: 200),
      "not an SQLite database"
    ),
    ("empty", [], "empty"),
    ("short", Array("SQLite format 3\0".utf8), "only 16 bytes"),
  ])
  func aFileThatIsNoDatabaseIsLeftAlone(_ name: String, bytes: [UInt8], words: String) throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    try Self.expectRefused(directory, path, words)
  }

  @Test(arguments: [0, 0x1234_5678] as [Int32])
  func anotherProgramsDatabaseIsLeftAlone(applicationID: Int32) throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("their.sqlite").path
    do {
      let theirs = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
      try theirs.execute(
        "PRAGMA application_id = \(applicationID); PRAGMA journal_mode = WAL; "
          + "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')")
    }
    try Self.expectRefused(directory, path, "another program")
  }

  @Test func aCorruptCatalogIsLeftAlone() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    do {
      let catalog = try SQLiteCatalog(path: path)
      try catalog.commit(Self.records(200).map { .insert($0) })
    }
    // Page 2 (the table's root) garbled from its header on.
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try handle.seek(toOffset: 4096)
    try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
    try handle.close()
    // A lock file the refused opener makes goes again.
    try FileManager.default.removeItem(atPath: path + ".lock")
    try Self.expectRefused(directory, path, "corrupt", reading: false)
  }

  @Test func aCatalogFromANewerHaulIsLeftAlone() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    do {
      let catalog = try SQLiteCatalog(path: path)
      try catalog.commit(Self.records(2).map { .insert($0) })
    }
    do {
      let raw = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
      try raw.execute("PRAGMA user_version = 9")
    }
    try Self.expectRefused(directory, path, "newer Haul (schema version 9")
  }

  @Test func aCatalogChangedOutsideHaulIsLeftAlone() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    do { _ = try SQLiteCatalog(path: path) }
    do {
      let raw = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
      try raw.execute(
        "CREATE TRIGGER spy AFTER INSERT ON downloads BEGIN UPDATE downloads SET url = 'x'; END")
    }
    try FileManager.default.removeItem(atPath: path + ".lock")
    try Self.expectRefused(directory, path, "changed outside Haul: it has spy", reading: false)
  }

  @Test func aSymbolicLinkIsNotFollowed() throws {
    let directory = try TemporaryDirectory()
    let real = directory.file("real.sqlite").path
    do { _ = try SQLiteCatalog(path: real) }
    let link = directory.file("link.sqlite").path
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
    try Self.expectRefused(directory, link, "symbolic link")
  }

  // MARK: - Migrations

  @Test func anOlderSchemaIsMigratedKeepingItsRecords() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    let records = Self.records(3)
    do {
      let catalog = try SQLiteCatalog(path: path)
      try catalog.commit(records.map { .insert($0) })
    }
    let next = CatalogMigration(
      version: 2,
      statements:
        "ALTER TABLE downloads ADD COLUMN note TEXT; CREATE INDEX downloads_note ON downloads (note)",
      objects: SQLiteCatalog.migrations[0].objects.union(["downloads_note"]))
    do {
      let migrated = try SQLiteCatalog(path: path, migrations: SQLiteCatalog.migrations + [next])
      #expect(try migrated.list() == records)
    }
    let raw = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
    #expect(try raw.integer("PRAGMA user_version") == 2)
    #expect(try raw.integer("SELECT count(note) FROM downloads") == 0)
    // This Haul's own steps stop at 1: the migrated file is now from a newer Haul.
    #expect(throws: HaulError.self) { try SQLiteCatalog(path: path) }
  }
}
