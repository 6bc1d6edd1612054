import CSQLite
import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("catalog: full disk, read-only file system", .timeLimit(.minutes(1)))
struct CatalogFaultTests {
  static func hold() -> DownloadManager.Configuration {
    var configuration = DownloadManager.Configuration()
    configuration.launch = .hold
    return configuration
  }

  // MARK: - Messages

  @Test func anIOErrorFromAFullDiskSaysTheDiskIsFullAndWhere() {
    let path = "/srv/data/catalog.sqlite"
    let errors = [
      SQLiteError(code: SQLITE_IOERR | (3 << 8), message: "disk I/O error", systemErrno: ENOSPC),
      SQLiteError(code: SQLITE_IOERR | (4 << 8), message: "disk I/O error", systemErrno: EDQUOT),
      SQLiteError(code: SQLITE_FULL, message: "database or disk is full"),
    ]
    for sqlite in errors {
      let error = SQLiteCatalog.haulError(sqlite, "save the catalog", path)
      #expect(error.category == .fileSystem)
      #expect(
        error.message == "cannot save the catalog: the disk holding the catalog \(path) is full", "\(error)")
      #expect(error.hint?.contains("free some space on the file system of /srv/data") == true, "\(error)")
      #expect(error.underlying is CatalogDiskFull)
    }
    let other = SQLiteCatalog.haulError(
      SQLiteError(code: SQLITE_IOERR | (3 << 8), message: "disk I/O error", systemErrno: EIO),
      "save the catalog",
      "/")
    #expect(!(other.underlying is CatalogDiskFull) || SQLiteCatalog.freeBytes("/") ?? 0 < 64 << 10)
  }

  /// SQLite's own SQLITE_FULL (a page limit standing in for the disk) carries errno and maps.
  @Test func sqlitesOwnFullErrorIsMapped() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("limited.sqlite").path
    let connection = try SQLiteConnection(
      path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX)
    try connection.execute("CREATE TABLE t (x TEXT); PRAGMA max_page_count = 3")
    do {
      for _ in 0..<100 { try connection.execute("INSERT INTO t VALUES (hex(randomblob(1000)))") }
      Issue.record("the page limit was never reached")
    } catch {
      #expect(error.primary == SQLITE_FULL, "\(error)")
      let mapped = SQLiteCatalog.haulError(error, "save the catalog", path)
      #expect(mapped.message.contains("the disk holding the catalog \(path) is full"), "\(mapped)")
      #expect(SQLiteCatalog.isDiskFull(mapped, path: path))
    }
  }

  // MARK: - Read-only

  /// Lists a catalog on a read-only file system (a tmpfs remounted, as root) or in a directory
  /// this user cannot write, creating nothing beside it.
  @Test(.enabled(if: SmallDisk.available || getuid() != 0, "needs root (a tmpfs) or a non-root user"))
  func aCatalogOnAReadOnlyFileSystemIsListed() async throws {
    let disk = getuid() == 0 ? try SmallDisk(size: "1m") : nil
    let scratch = try TemporaryDirectory()
    let directory = disk?.url ?? scratch.url.appendingPathComponent("ro")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let catalog = directory.appendingPathComponent("catalog.sqlite")
    do {
      let manager = try DownloadManager(catalog: catalog, configuration: Self.hold())
      try await manager.add(ManagerDiskFullTests.requests(0..<3, into: directory), paused: true)
      await manager.close()
    }
    try FileManager.default.removeItem(atPath: catalog.path + ".lock")
    if let disk {
      try disk.remount("ro")
    } else {
      try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: directory.path)
    }
    defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path) }
    let before = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    #expect(before == ["catalog.sqlite"])
    var listed: [DownloadSnapshot] = []
    try DownloadManager.read(catalog: catalog) { listed.append($0) }
    #expect(listed.count == 3 && listed.allSatisfy { $0.state == .paused })
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == before)
  }
}
