import CSQLite

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The catalog's file before SQLite touches it. A file on disk is untrusted input: it is read
/// here by `SafeFile`'s rules (no link followed, a regular file of ours) and checked to be a Haul catalog (SQLite's header and Haul's
/// `application_id`), so a foreign or garbled file is refused without SQLite ever opening it
/// (which could write to it). A new catalog is built under a temporary name and linked into
/// place complete, so a catalog is never half made.
enum CatalogFile {
  /// `PRAGMA application_id`: "Haul" in ASCII.
  static let applicationID: Int32 = 0x4861_756C

  /// What is at the catalog's path.
  enum Inspection: Equatable {
    case missing
    case catalog
  }

  /// `latest`: the newest schema version this Haul knows; a header that names a newer one is
  /// refused here, before anything is opened or created beside the file.
  static func inspect(_ path: String, latest: Int) throws(HaulError) -> Inspection {
    for sidecar in [path + "-wal", path + "-shm", path + "-journal"] {
      do {
        _ = try SafeFile.check(sidecar)
      } catch {
        throw error.haulError
      }
    }
    guard let file = try openIfThere(path) else {
      if FileIO.exists(path + "-wal") {
        throw HaulError(
          .fileSystem, "\(path) is missing but its log \(path)-wal is there",
          hint: "restore the catalog, or move \(path)-wal away to start a new one")
      }
      return .missing
    }
    var header = [UInt8](repeating: 0, count: 100)
    let count = header.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, 0) }
    guard count >= 0 else {
      throw HaulError(
        .fileSystem, "cannot read the catalog \(path)", underlying: SystemError("pread", errno: errno))
    }
    return try check(header: Array(header.prefix(count)), path: path, latest: latest)
  }

  private static func openIfThere(_ path: String) throws(HaulError) -> SafeFile? {
    do {
      return try SafeFile.openExisting(path, access: .readOnly)
    } catch {
      guard error.errno == ENOENT else { throw error.haulError }
      return nil
    }
  }

  /// Refuses anything but a Haul catalog's first 100 bytes.
  static func check(header: [UInt8], path: String, latest: Int = .max) throws(HaulError) -> Inspection {
    let notOurs = "Haul leaves it as it is; choose another catalog file, or move this one away"
    guard header.count == 100 else {
      throw HaulError(
        .fileSystem,
        "\(path) is not a Haul catalog: it is \(header.isEmpty ? "empty" : "only \(header.count) bytes long")",
        hint: notOurs)
    }
    guard header.prefix(16).elementsEqual(Array("SQLite format 3\0".utf8)) else {
      throw HaulError(.fileSystem, "\(path) is not a Haul catalog (not an SQLite database)", hint: notOurs)
    }
    let id = header[68..<72].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    guard Int32(bitPattern: id) == applicationID else {
      let hex = String(id, radix: 16)
      throw HaulError(
        .fileSystem,
        "\(path) is an SQLite database of another program (application_id 0x\(hex)), not a Haul catalog",
        hint: notOurs)
    }
    let version = header[60..<64].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    guard Int(version) <= latest else {
      throw HaulError(
        .fileSystem,
        "the catalog \(path) was written by a newer Haul (schema version \(version); this one knows up to \(latest))",
        hint: "use the newer haul with it, or choose another catalog file")
    }
    return .catalog
  }

  /// Creates a new, empty catalog at `path` (which must not exist): built and synced under a
  /// temporary name, then linked into place.
  static func create(_ path: String, migrations: [CatalogMigration]) throws(HaulError) {
    let temporary: String
    do {
      let (descriptor, name) = try SafeFile.createTemporary(beside: path, mode: 0o600)
      close(descriptor)
      temporary = name
    } catch {
      throw error.haulError
    }
    defer {
      for leftover in [temporary, temporary + "-journal", temporary + "-wal", temporary + "-shm"] {
        try? FileIO.remove(leftover)
      }
    }
    do {
      let connection = try SQLiteConnection(
        path: temporary, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX)
      try connection.execute("PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL")
      try connection.transaction { () throws(SQLiteError) in
        try connection.execute("PRAGMA application_id = \(applicationID)")
        try CatalogMigration.run(migrations, from: 0, on: connection)
      }
      // The mode is kept in the file; the header already holds the application_id.
      guard try connection.text("PRAGMA journal_mode = WAL") == "wal" else {
        throw SQLiteError(
          code: SQLITE_CANTOPEN, message: "the file system does not support SQLite's WAL mode")
      }
    } catch {
      throw SQLiteCatalog.haulError(error, "create the catalog", path)
    }
    do {
      try SafeFile.openExisting(temporary, access: .readOnly).sync()
    } catch let error as LocalFileError {
      throw error.haulError
    } catch {
      throw HaulError(.fileSystem, "cannot sync the new catalog \(path)", underlying: error)
    }
    // link() never replaces: a catalog that appeared meanwhile is kept (and opened instead).
    if link(temporary, path) != 0, errno != EEXIST {
      throw SQLiteCatalog.fileError(errno, "create the catalog", path)
    }
    FileIO.syncDirectory(DownloadPaths(target: path).directory)
  }
}

/// One step of the catalog's schema: the statements that take it from `version - 1` to `version`.
struct CatalogMigration: Sendable {
  let version: Int
  let statements: String
  /// The tables and indexes that exist once it ran (with all earlier steps').
  let objects: Set<String>

  /// Runs the steps after `current`, and records the new version; inside the caller's transaction.
  static func run(_ steps: [CatalogMigration], from current: Int, on connection: SQLiteConnection)
    throws(SQLiteError)
  {
    for step in steps where step.version > current {
      try connection.execute(step.statements)
      try connection.execute("PRAGMA user_version = \(step.version)")
    }
  }
}
