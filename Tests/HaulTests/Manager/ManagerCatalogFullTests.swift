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

/// An SQLite catalog whose commits fail as a full disk's do, on demand: what a test can do
/// without mounting a small file system.
final class FullDiskCatalog: DownloadCatalog, @unchecked Sendable {
  let inner: SQLiteCatalog
  /// Commits that fail before they succeed again; `Int.max`: all of them.
  var failures = 0
  /// Only commits that end a run fail.
  var onlyRunEnds = false
  /// Any error other than a full disk's, to compare with.
  var otherError = false

  init(path: String) throws { inner = try SQLiteCatalog(path: path) }

  func list() throws(HaulError) -> [DownloadRecord] { try inner.list() }

  func commit(_ changes: [RecordChange]) throws(HaulError) {
    let endsRun = changes.contains { if case .finish = $0 { true } else { false } }
    if failures > 0, !onlyRunEnds || endsRun {
      failures -= 1
      if otherError { throw HaulError(.fileSystem, "cannot save the catalog: it is corrupt") }
      throw SQLiteCatalog.haulError(
        SQLiteError(code: SQLITE_FULL, message: "database or disk is full"), "save the catalog", inner.path)
    }
    try inner.commit(changes)
  }

  func claimNext(_ count: Int) throws(HaulError) -> [DownloadRecord] { try inner.claimNext(count) }
  func recordProgress(_ progress: [ProgressRecord]) throws(HaulError) { try inner.recordProgress(progress) }
  func close() { inner.close() }
}

@Suite("manager: catalog commits on a full disk", .timeLimit(.minutes(1)))
struct ManagerCatalogFullTests {
  static func manager(_ catalog: FullDiskCatalog) throws -> DownloadManager {
    try DownloadManager(
      catalog: catalog, at: URL(fileURLWithPath: catalog.inner.path), configuration: CatalogFaultTests.hold())
  }

  /// A paused download into `directory`/big.iso holding a `.part` and a state file.
  static func addHeldDownload(_ manager: DownloadManager, in directory: TemporaryDirectory) async throws
    -> (DownloadID, DownloadPaths)
  {
    let target = directory.file("big.iso")
    let id = try await manager.add("http://127.0.0.1:9/big.iso", to: .file(target), paused: true)
    let paths = DownloadPaths(target: target.path)
    try Data(count: 4096).write(to: URL(fileURLWithPath: paths.part))
    try Data("state".utf8).write(to: URL(fileURLWithPath: paths.state))
    return (id, paths)
  }

  // MARK: - Removing on a full disk

  @Test func removingWithFilesOnAFullDiskDeletesThemThenCommits() async throws {
    let directory = try TemporaryDirectory()
    let catalog = try FullDiskCatalog(path: directory.file("catalog.sqlite").path)
    let manager = try Self.manager(catalog)
    let (id, paths) = try await Self.addHeldDownload(manager, in: directory)
    catalog.failures = 1
    try await manager.remove(id, deletingFiles: true)
    #expect(!FileManager.default.fileExists(atPath: paths.part))
    #expect(!FileManager.default.fileExists(atPath: paths.state))
    #expect(manager.downloads().isEmpty)
    await manager.close()
    var listed: [DownloadID] = []
    try DownloadManager.read(catalog: URL(fileURLWithPath: catalog.inner.path)) { listed.append($0.id) }
    #expect(listed.isEmpty, "the removal was committed")
  }

  @Test func aRemovalStillRefusedSaysTheFilesWentAndTheDownloadStaysListedWithNothing() async throws {
    let directory = try TemporaryDirectory()
    let catalog = try FullDiskCatalog(path: directory.file("catalog.sqlite").path)
    let manager = try Self.manager(catalog)
    let (id, paths) = try await Self.addHeldDownload(manager, in: directory)
    catalog.failures = .max
    do {
      try await manager.remove(id, deletingFiles: true)
      Issue.record("the removal was saved")
    } catch {
      #expect(
        error.message.contains("is full; the downloads' files were deleted, but they stay listed"), "\(error)"
      )
      #expect(error.hint == "free more space, then remove them again")
    }
    #expect(!FileManager.default.fileExists(atPath: paths.part))
    #expect(manager.downloads().map(\.id) == [id])
    await manager.close()
    var listed: [DownloadSnapshot] = []
    try DownloadManager.read(catalog: URL(fileURLWithPath: catalog.inner.path)) { listed.append($0) }
    #expect(listed.map(\.id) == [id] && listed.first?.bytes == 0, "listed as holding nothing: \(listed)")
  }

  @Test func anotherCatalogFailureKeepsTheFiles() async throws {
    let directory = try TemporaryDirectory()
    let catalog = try FullDiskCatalog(path: directory.file("catalog.sqlite").path)
    let manager = try Self.manager(catalog)
    let (id, paths) = try await Self.addHeldDownload(manager, in: directory)
    catalog.failures = .max
    catalog.otherError = true
    await #expect(throws: HaulError.self) { try await manager.remove(id, deletingFiles: true) }
    #expect(FileManager.default.fileExists(atPath: paths.part))
    #expect(FileManager.default.fileExists(atPath: paths.state))
    await manager.close()
  }

  // MARK: - A run's end the disk had no room for

  @Test func aFailureTheCatalogRefusedIsSavedLater() async throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    let catalog = try FullDiskCatalog(path: path)
    var configuration = DownloadManager.Configuration()
    configuration.launch = .resume
    let manager = try DownloadManager(
      catalog: catalog, at: URL(fileURLWithPath: path), configuration: configuration)
    let gone = directory.file("gone")
    try FileManager.default.createDirectory(at: gone, withIntermediateDirectories: true)
    let id = try await manager.add("http://127.0.0.1:9/x.bin", to: .directory(gone), paused: true)
    try FileManager.default.removeItem(at: gone)
    catalog.onlyRunEnds = true
    catalog.failures = 1
    let events = manager.events()
    try await manager.resume(id)
    var hint: String?
    for await event in events {
      if case .failed(id, let error) = event {
        hint = error.hint
        break
      }
    }
    #expect(
      hint?.contains("the catalog has not saved this yet (cannot save the catalog: the disk") == true,
      "\(hint ?? "")")
    #expect(manager.download(id)?.state == .failed)
    let deadline = ContinuousClock.now + .seconds(10)
    var state: DownloadState?
    while ContinuousClock.now < deadline {
      try DownloadManager.read(catalog: URL(fileURLWithPath: path)) { if $0.id == id { state = $0.state } }
      if state == .failed { break }
      try await Task.sleep(for: .milliseconds(100))
    }
    #expect(state == .failed, "the catalog still says \(String(describing: state))")
    await manager.close()
  }

  // MARK: - A real full disk

  /// With the disk full and no shared-memory file (no owner), the catalog is still listed,
  /// opened, and a removal with files frees the space; an addition says the disk is full.
  @Test(.enabled(if: SmallDisk.available, "mounting a tmpfs needs root; skipped"))
  func onAFullDiskTheCatalogIsListedAndRemovingFreesSpace() async throws {
    let disk = try SmallDisk(size: "1m")
    let catalog = disk.url.appendingPathComponent("catalog.sqlite")
    let target = disk.url.appendingPathComponent("big.iso")
    let id: DownloadID
    do {
      let manager = try DownloadManager(catalog: catalog, configuration: CatalogFaultTests.hold())
      id = try await manager.add("http://127.0.0.1:9/big.iso", to: .file(target), paused: true)
      await manager.close()
    }
    // The partial takes every byte left.
    let part = try FileHandle(
      forWritingTo: URL(fileURLWithPath: target.path + ".part", isDirectory: false).creating())
    while (try? part.write(contentsOf: Data(count: 4096))) != nil {}
    try? part.close()
    #expect(SQLiteCatalog.freeBytes(disk.url.path) ?? 1 < 4096)
    var listed: [DownloadID] = []
    try DownloadManager.read(catalog: catalog) { listed.append($0.id) }
    #expect(listed == [id])
    let manager = try DownloadManager(catalog: catalog, configuration: CatalogFaultTests.hold())
    do {
      try await manager.add("http://127.0.0.1:9/more.iso", to: .directory(disk.url), paused: true)
      Issue.record("added on a full disk")
    } catch {
      #expect(error.message.contains("the disk holding the catalog \(catalog.path) is full"), "\(error)")
    }
    try await manager.remove(id, deletingFiles: true)
    #expect(!FileManager.default.fileExists(atPath: target.path + ".part"))
    await manager.close()
    listed = []
    try DownloadManager.read(catalog: catalog) { listed.append($0.id) }
    #expect(listed.isEmpty)
  }
}

extension URL {
  /// Creates an empty file here and returns the URL (for `FileHandle(forWritingTo:)`).
  fileprivate func creating() -> URL {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    return self
  }
}
