import CSQLite
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The catalog of one process: an SQLite file in WAL mode with `synchronous = FULL` (every
/// commit is on disk before it returns: a kill -9 or a power cut loses no committed change;
/// but claims and progress numbers, which a crash may lose, ride on the next commit's sync),
/// its schema versioned by `PRAGMA user_version` with migrations, marked as Haul's by
/// `PRAGMA application_id`, owned by one process at a time (`CatalogLock`).
///
/// A file at the path that is not a Haul catalog, or a catalog that is corrupt or from a newer
/// Haul, is refused with a message and left as it was. The file is untrusted input: opened
/// with `SQLITE_OPEN_NOFOLLOW`, with triggers, views and schema writes switched off.
final class SQLiteCatalog: DownloadCatalog {
  let path: String
  private let lock: CatalogLock
  private let connection: SQLiteConnection
  private let owner: String
  private var statements: [Query: SQLiteStatement] = [:]

  /// Opens the catalog at `path`, creating it when nothing is there.
  /// - Throws: `HaulError`: another process owns it (with its pid), the file is not a Haul
  ///   catalog, is corrupt, comes from a newer Haul, or cannot be read or written.
  convenience init(path: String) throws(HaulError) {
    try self.init(path: path, migrations: Self.migrations)
  }

  /// `migrations`: tests use other steps to exercise the migration path.
  init(path: String, migrations: [CatalogMigration]) throws(HaulError) {
    self.path = path
    let latest = migrations.last?.version ?? 0
    // A file refused by its first bytes gets no lock file beside it. With a lock file there it
    // may be another opener's catalog in the making (linked into place, its temporary name not
    // yet gone: two links): the inspection under the lock decides.
    do throws(HaulError) {
      _ = try CatalogFile.inspect(path, latest: latest)
    } catch {
      guard FileIO.exists(path + ".lock") else { throw error }
    }
    let lock = try CatalogLock(catalog: path)
    do throws(HaulError) {
      if try CatalogFile.inspect(path, latest: latest) == .missing {
        try CatalogFile.create(path, migrations: migrations)
        _ = try CatalogFile.inspect(path, latest: latest)
      }
      connection = try Self.open(path, migrations: migrations)
    } catch {
      lock.discardIfCreated()
      throw error
    }
    self.lock = lock
    owner = "pid \(getpid())"
    do {
      // Only one process opens the file, so every claim left in it belongs to one that is gone.
      try connection.transaction { () throws(SQLiteError) in
        try connection.execute("UPDATE downloads SET claimed_by = NULL WHERE claimed_by IS NOT NULL")
      }
    } catch  where Self.isDiskFull(error, path: path) {
      // Left for the next open: a full disk must not keep `remove` from freeing space.
    } catch {
      throw Self.haulError(error, "open the catalog", path)
    }
  }

  /// Opens, validates and migrates the file, which `CatalogFile.inspect` accepted. When it is
  /// refused, the log files the attempt created are removed again and the catalog is untouched.
  private static func open(_ path: String, migrations: [CatalogMigration]) throws(HaulError)
    -> SQLiteConnection
  {
    do throws(HaulError) {
      return try open(path, migrations: migrations, exclusive: false)
    } catch  where isDiskFull(error, path: path) {
      // No room for the shared-memory file (-shm): exclusive locking keeps that index in this
      // process's memory, so the catalog can still be opened (and `remove` free space). Readers
      // wait while it is open; only short-lived commands meet a full disk at open.
      return try open(path, migrations: migrations, exclusive: true)
    }
  }

  private static func open(_ path: String, migrations: [CatalogMigration], exclusive: Bool) throws(HaulError)
    -> SQLiteConnection
  {
    let sidecars = [path + "-wal", path + "-shm"]
    let existed = sidecars.map(FileIO.exists)
    do {
      let connection = try SQLiteConnection(
        path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX)
      // The previous holder's connection may still be checkpointing as it closes (its lock goes
      // first): wait for it rather than fail with "database is locked".
      try connection.execute("PRAGMA busy_timeout = 10000")
      if exclusive { try connection.execute("PRAGMA locking_mode = EXCLUSIVE") }
      do {
        try validate(connection, path: path, migrations: migrations)
        return connection
      }
    } catch let error as SQLiteError {
      removeCreated(sidecars, existed: existed)
      throw haulError(error, "open the catalog", path)
    } catch let error as HaulError {
      removeCreated(sidecars, existed: existed)
      throw error
    } catch {
      removeCreated(sidecars, existed: existed)
      throw HaulError(.generic, "cannot open the catalog \(path): \(error)")
    }
  }

  private static func removeCreated(_ sidecars: [String], existed: [Bool]) {
    for (sidecar, existed) in zip(sidecars, existed) where !existed { try? FileIO.remove(sidecar) }
  }

  static let moveAway = "Haul left it as it is; move it away to start a new catalog"

  /// Switches off what a tampered file could use to run code or corrupt itself, and checkpoints
  /// into the file until it is accepted.
  private static func harden(_ connection: SQLiteConnection) throws(SQLiteError) {
    try connection.configure(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
    try connection.configure(SQLITE_DBCONFIG_DEFENSIVE, true)
    try connection.configure(SQLITE_DBCONFIG_ENABLE_TRIGGER, false)
    try connection.configure(SQLITE_DBCONFIG_ENABLE_VIEW, false)
    try connection.configure(SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)
  }

  /// Haul's application_id, and a schema version this Haul knows (returned).
  private static func identity(_ connection: SQLiteConnection, path: String, latest: Int) throws -> Int {
    guard try connection.integer("PRAGMA application_id") == Int64(CatalogFile.applicationID) else {
      throw HaulError(.fileSystem, "\(path) is not a Haul catalog", hint: moveAway)
    }
    let version = Int(try connection.integer("PRAGMA user_version") ?? 0)
    guard version <= latest else {
      throw HaulError(
        .fileSystem,
        "the catalog \(path) was written by a newer Haul (schema version \(version); this one knows up to \(latest))",
        hint: "use the newer haul with it, or choose another catalog file")
    }
    return version
  }

  private static func validate(_ connection: SQLiteConnection, path: String, migrations: [CatalogMigration])
    throws
  {
    try harden(connection)
    let latest = migrations.last?.version ?? 0
    let version = try identity(connection, path: path, latest: latest)
    guard let step = migrations.first(where: { $0.version == version }) else {
      throw HaulError(.fileSystem, "the catalog \(path) is incomplete (no schema)", hint: Self.moveAway)
    }
    let check = try connection.text("PRAGMA quick_check")
    guard check == "ok" else {
      throw HaulError(
        .fileSystem, "the catalog \(path) is corrupt: \(check ?? "no answer")", hint: Self.moveAway)
    }
    let names = try connection.prepare("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")
    var objects: Set<String> = []
    while try names.step() { objects.insert(names.text(0) ?? "") }
    guard objects == step.objects else {
      let extra = objects.subtracting(step.objects).sorted()
      let missing = step.objects.subtracting(objects).sorted()
      let detail =
        extra.isEmpty ? "lacks \(missing.joined(separator: ", "))" : "has \(extra.joined(separator: ", "))"
      throw HaulError(
        .fileSystem, "the catalog \(path) was changed outside Haul: it \(detail)", hint: Self.moveAway)
    }
    if version < latest {
      try connection.transaction { () throws(SQLiteError) in
        try CatalogMigration.run(migrations, from: version, on: connection)
      }
    }
    if try connection.text("PRAGMA journal_mode") != "wal" {
      guard try connection.text("PRAGMA journal_mode = WAL") == "wal" else {
        throw HaulError(.fileSystem, "cannot use SQLite's WAL mode for the catalog \(path)")
      }
    }
    try connection.execute("PRAGMA synchronous = FULL")
    try connection.configure(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
  }

  func close() { statements.removeAll() }

  /// Reads every record of the catalog at `path`, in queue order, without opening it for
  /// changes: no lock, nothing written (WAL lets a reader see the last commit while another
  /// process owns the file), one row in memory at a time. On a read-only file system (or a
  /// directory this user cannot write) it opens the file as immutable, creating no side file,
  /// and so on a full disk when the log is empty (no room for the shared-memory file).
  /// - Returns: false when no catalog is there.
  static func read(path: String, each body: (DownloadRecord) -> Void) throws(HaulError) -> Bool {
    let latest = migrations.last?.version ?? 0
    guard try CatalogFile.inspect(path, latest: latest) == .catalog else { return false }
    do {
      let connection: SQLiteConnection
      let sidecars = [path + "-wal", path + "-shm"]
      let existed = sidecars.map(FileIO.exists)
      do {
        connection = try reader(path, immutable: !canCreateSidecars(path))
      } catch  where isDiskFull(error, path: path) && walSize(path) == 0 {
        // No room for the -shm (and one this attempt could not grow is of no use to anyone).
        // With an empty log the file alone holds every commit, and a writer on this full disk
        // has no room to add any.
        removeCreated(sidecars, existed: existed)
        connection = try reader(path, immutable: true)
      }
      let version = try identity(connection, path: path, latest: latest)
      guard version == latest else {
        throw HaulError(
          .fileSystem, "the catalog \(path) has an older schema (version \(version))",
          hint: "open it once with a DownloadManager (e.g. haul add) to bring it up to date")
      }
      let statement = try connection.prepare("SELECT \(columns) FROM downloads ORDER BY position, id")
      var decoder = RowDecoder()
      while try statement.step() { body(try decoder.record(statement, path: path)) }
      return true
    } catch {
      throw haulError(error, "read the catalog", path)
    }
  }

  /// Whether to read as SQLite usually does (making the -wal and -shm files when missing): the
  /// directory is writable, or the log holds commits (then its -shm must be there). Else nobody
  /// can change the catalog, and an empty or missing log means the file holds every commit.
  private static func canCreateSidecars(_ path: String) -> Bool {
    walSize(path) > 0 || access(DownloadPaths(target: path).directory, W_OK) == 0
  }

  /// The size of the catalog's log; 0 when there is none.
  private static func walSize(_ path: String) -> Int64 {
    var info = stat()
    return lstat(path + "-wal", &info) == 0 ? Int64(info.st_size) : 0
  }

  /// A read-only connection whose first read has been made (so that a full disk shows here).
  /// `immutable`: the file alone, no locks, no side files (only where nobody can write it).
  private static func reader(_ path: String, immutable: Bool) throws -> SQLiteConnection {
    let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
    let connection =
      immutable
      ? try SQLiteConnection(path: uri(path) + "?immutable=1", flags: flags | SQLITE_OPEN_URI)
      : try SQLiteConnection(path: path, flags: flags)
    try harden(connection)
    // An owner that closes checkpoints and removes the WAL under an exclusive lock: wait for it
    // rather than fail with "database is locked".
    try connection.execute("PRAGMA busy_timeout = 10000")
    _ = try connection.integer("PRAGMA schema_version")
    return connection
  }

  /// `path` as an SQLite URI: every byte but unreserved ones and `/` percent-encoded.
  private static func uri(_ path: String) -> String {
    var uri = "file:"
    for byte in path.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"), UInt8(ascii: "/"):
        uri.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        uri += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
      }
    }
    return uri
  }

  // MARK: - The five verbs

  func list() throws(HaulError) -> [DownloadRecord] {
    do {
      let statement = try prepared(.list)
      var decoder = RowDecoder()
      var records: [DownloadRecord] = []
      try statement.bind()
      while try statement.step() { records.append(try decoder.record(statement, path: path)) }
      return records
    } catch {
      throw Self.haulError(error, "read the catalog", path)
    }
  }

  func commit(_ changes: [RecordChange]) throws(HaulError) {
    guard !changes.isEmpty else { return }
    do {
      try connection.transaction { () throws(SQLiteError) in
        var encoder = OptionsEncoder()
        for change in changes { try write(change, encoder: &encoder) }
      }
    } catch {
      throw Self.haulError(error, "save the catalog", path)
    }
  }

  func claimNext(_ count: Int) throws(HaulError) -> [DownloadRecord] {
    guard count > 0 else { return [] }
    do {
      // Not synced: a claim lost in a crash leaves the download queued, which is what the next
      // launch makes of an active one anyway (`ManagerStateMachine.launch`).
      return try connection.transaction(durable: false) { () throws(SQLiteError) in
        let select = try prepared(.runnable)
        try select.bind(.integer(Int64(count)))
        var decoder = RowDecoder()
        var records: [DownloadRecord] = []
        while try select.step() {
          // The schema's CHECKs guarantee decodable rows; one that is not is left unclaimed.
          guard var record = try? decoder.record(select, path: path) else { continue }
          record.state = .active
          records.append(record)
        }
        let claim = try prepared(.claim)
        for record in records { try claim.bind(.text(record.id.description), .text(owner)).run() }
        return records
      }
    } catch {
      throw Self.haulError(error, "save the catalog", path)
    }
  }

  func recordProgress(_ progress: [ProgressRecord]) throws(HaulError) {
    guard !progress.isEmpty else { return }
    do {
      // Numbers for listing: the engine's state files are what resuming trusts.
      try connection.transaction(durable: false) { () throws(SQLiteError) in
        let update = try prepared(.progress)
        for item in progress {
          try update.bind(
            .text(item.id.description), .integer(item.bytes), .int(item.totalBytes), .string(item.file)
          ).run()
        }
      }
    } catch {
      throw Self.haulError(error, "save the catalog", path)
    }
  }

  // MARK: - Statements

  private enum Query: Hashable {
    case list, runnable, claim, progress, insert, state, position, options, url, finish, delete
  }

  static let columns = """
    id, url, destination_kind, destination, file, options, secrets, state, position, bytes, total, \
    error_category, error_message, error_hint, sha256, final_url, added_at, finished_at
    """

  private func prepared(_ query: Query) throws(SQLiteError) -> SQLiteStatement {
    if let statement = statements[query] { return statement }
    let sql =
      switch query {
      case .list: "SELECT \(Self.columns) FROM downloads ORDER BY position, id"
      case .runnable:
        "SELECT \(Self.columns) FROM downloads WHERE state = 'queued' AND claimed_by IS NULL "
          + "ORDER BY position, id LIMIT ?1"
      case .claim: "UPDATE downloads SET state = 'active', claimed_by = ?2 WHERE id = ?1"
      case .progress: "UPDATE downloads SET bytes = ?2, total = ?3, file = coalesce(?4, file) WHERE id = ?1"
      case .insert:
        "INSERT INTO downloads (\(Self.columns)) VALUES "
          + "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
      case .state:
        "UPDATE downloads SET state = ?2, error_category = ?3, error_message = ?4, error_hint = ?5 WHERE id = ?1"
      case .position: "UPDATE downloads SET position = ?2 WHERE id = ?1"
      case .options: "UPDATE downloads SET options = ?2, secrets = (secrets & ~2) | ?3 WHERE id = ?1"
      case .url: "UPDATE downloads SET url = ?2, secrets = (secrets & ~1) | ?3 WHERE id = ?1"
      case .finish:
        "UPDATE downloads SET state = ?2, bytes = ?3, total = ?4, file = coalesce(?5, file), "
          + "error_category = ?6, error_message = ?7, error_hint = ?8, sha256 = ?9, "
          + "final_url = coalesce(?10, final_url), finished_at = ?11, claimed_by = NULL WHERE id = ?1"
      case .delete: "DELETE FROM downloads WHERE id = ?1"
      }
    let statement = try connection.prepare(sql)
    statements[query] = statement
    return statement
  }

  private func write(_ change: RecordChange, encoder: inout OptionsEncoder) throws(SQLiteError) {
    let id = SQLiteValue.text(change.id.description)
    switch change {
    case .insert(let record):
      let (kind, destination) =
        switch record.destination {
        case .file(let url): ("file", url.path)
        case .directory(let url): ("directory", url.path)
        }
      try prepared(.insert).bind(
        id, .text(record.url), .text(kind), .text(destination), .string(record.file),
        .text(encoder.json(record.options)), .integer(Int64(record.secrets.rawValue)),
        .text(record.state.rawValue),
        .integer(record.position), .integer(record.bytes), .int(record.totalBytes),
        .int(record.error.map { Int64($0.category) }), .string(record.error?.message),
        .string(record.error?.hint), .string(record.sha256), .string(record.finalURL), .real(record.addedAt),
        .double(record.finishedAt)
      ).run()
    case .state(_, let state, let error):
      try prepared(.state).bind(
        id, .text(state.rawValue), .int(error.map { Int64($0.category) }), .string(error?.message),
        .string(error?.hint)
      ).run()
    case .position(_, let position):
      try prepared(.position).bind(id, .integer(position)).run()
    case .options(_, let options, let secrets):
      try prepared(.options).bind(
        id, .text(encoder.json(options)), .integer(Int64(secrets.intersection(.headers).rawValue))
      ).run()
    case .url(_, let url, let secrets):
      try prepared(.url).bind(id, .text(url), .integer(Int64(secrets.intersection(.urlPassword).rawValue)))
        .run()
    case .finish(_, let result):
      try prepared(.finish).bind(
        id, .text(result.state.rawValue), .integer(result.bytes), .int(result.totalBytes),
        .string(result.file),
        .int(result.error.map { Int64($0.category) }), .string(result.error?.message),
        .string(result.error?.hint),
        .string(result.sha256), .string(result.finalURL), .double(result.finishedAt)
      ).run()
    case .delete:
      try prepared(.delete).bind(id).run()
    }
  }

  // MARK: - Errors

  /// Whether `error` (an `SQLiteError`, or a `HaulError` made of one) means no room is left on
  /// the catalog's disk: SQLITE_FULL, or an I/O error from ENOSPC or EDQUOT. SQLite does not
  /// keep errno for every call (growing the -shm file leaves a stale one), so any I/O error
  /// counts when the file system has less free than the 32 KiB that file needs, and some.
  static func isDiskFull(_ error: any Error, path: String) -> Bool {
    let error = (error as? HaulError)?.underlying ?? error
    if error is CatalogDiskFull { return true }
    guard let error = error as? SQLiteError else { return false }
    if error.primary == SQLITE_FULL { return true }
    guard error.primary == SQLITE_IOERR else { return false }
    if SystemError.meansNoSpace(error.systemErrno) { return true }
    return (freeBytes(DownloadPaths(target: path).directory) ?? .max) < 64 << 10
  }

  /// Bytes an unprivileged user may still write on the file system of `directory`.
  static func freeBytes(_ directory: String) -> UInt64? {
    var info = statvfs()
    guard statvfs(directory, &info) == 0 else { return nil }
    return UInt64(info.f_bavail) * UInt64(info.f_frsize)
  }

  static func diskFull(_ action: String, _ path: String, underlying: (any Error & Sendable)?) -> HaulError {
    let directory = DownloadPaths(target: path).directory
    return HaulError(
      .fileSystem, "cannot \(action): the disk holding the catalog \(path) is full",
      hint: "free some space on the file system of \(directory) (df shows it) and try again; "
        + "nothing saved before is lost",
      underlying: CatalogDiskFull(path: path, cause: underlying))
  }

  static func haulError(_ error: SQLiteError, _ action: String, _ path: String) -> HaulError {
    if isDiskFull(error, path: path) { return diskFull(action, path, underlying: error) }
    if error.systemErrno == EROFS {
      return HaulError(
        .fileSystem, "cannot \(action): \(path) is on a read-only file system", underlying: error)
    }
    switch error.primary {
    case SQLITE_CORRUPT, SQLITE_NOTADB:
      return HaulError(
        .fileSystem, "the catalog \(path) is corrupt: \(error.message)",
        hint: "Haul left it as it is; move it away to start a new catalog", underlying: error)
    case SQLITE_READONLY:
      return HaulError(.fileSystem, "cannot \(action): \(path) is read-only", underlying: error)
    case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PERM:
      let cause = error.systemErrno == 0 ? "" : " (\(String(cString: strerror(error.systemErrno))))"
      return HaulError(.fileSystem, "cannot \(action) \(path): \(error.message)\(cause)", underlying: error)
    default:
      return HaulError(.generic, "cannot \(action) \(path): \(error.message)", underlying: error)
    }
  }

  static func haulError(_ error: any Error, _ action: String, _ path: String) -> HaulError {
    switch error {
    case let error as HaulError: error
    case let error as SQLiteError: haulError(error, action, path)
    default: HaulError(.generic, "cannot \(action) \(path): \(error)")
    }
  }

  static func fileError(_ code: Int32, _ action: String, _ path: String) -> HaulError {
    let cause = SystemError("open", errno: code)
    switch code {
    case ENOSPC, EDQUOT:
      return diskFull(action, path, underlying: cause)
    case EROFS:
      return HaulError(
        .fileSystem, "cannot \(action): \(path) is on a read-only file system", underlying: cause)
    default:
      return HaulError(
        .fileSystem, "cannot \(action) \(path): \(String(cString: strerror(code)))", underlying: cause)
    }
  }
}

/// The `underlying` of the error for a catalog whose disk is full, with the cause (an
/// `SQLiteError` or `SystemError`), so that callers can tell that case without parsing text.
struct CatalogDiskFull: Error, Sendable, CustomStringConvertible {
  let path: String
  let cause: (any Error & Sendable)?

  var description: String { "no space left for \(path)" + (cause.map { ": \($0)" } ?? "") }
}

/// Options as JSON, each distinct value encoded once per transaction (10,000 downloads added
/// together usually share theirs).
private struct OptionsEncoder {
  private var cache: [StoredOptions: String] = [:]
  private let encoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
  }()

  mutating func json(_ options: StoredOptions) -> String {
    if let json = cache[options] { return json }
    // A proxy URL's password is a secret, as the download URL's is: memory keeps it (the
    // record in memory is not changed), the catalog does not.
    var written = options
    written.network.proxy = options.network.proxy.map { Self.withoutPassword(proxy: $0) }
    // Plain values encode without fail; "{}" (the defaults) keeps it total.
    let json = (try? encoder.encode(written)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    cache[options] = json
    return json
  }

  /// `http://joe:pw@proxy:3128` → `http://joe@proxy:3128`; libcurl also takes `joe:pw@proxy:3128`.
  static func withoutPassword(proxy: String) -> String {
    guard !proxy.contains("://") else { return RequestURL.withoutPassword(proxy) }
    return String(RequestURL.withoutPassword("x://" + proxy).dropFirst("x://".count))
  }
}

/// Rows back into records; each distinct options text decoded once per listing.
private struct RowDecoder {
  /// A record with each distinct options text decoded, whose options the next ones share.
  private var options: [String: DownloadRecord] = [:]
  /// Destinations are shared by many downloads (all into one directory); one URL each.
  private var destinations: [String: URL] = [:]

  mutating func record(_ row: SQLiteStatement, path: String) throws(HaulError) -> DownloadRecord {
    let rawID = row.text(0) ?? ""
    func corrupt(_ what: String) -> HaulError {
      HaulError(
        .fileSystem, "the catalog \(path) has an unreadable record (\(rawID)): \(what)",
        hint: "Haul left it as it is; move it away to start a new catalog")
    }
    guard let id = DownloadID(rawID) else { throw corrupt("bad id") }
    guard let state = DownloadState(rawValue: row.text(7) ?? "") else { throw corrupt("bad state") }
    let path = row.text(3) ?? ""
    let destinationPath = destinations[path] ?? URL(fileURLWithPath: path)
    destinations[path] = destinationPath
    let destination: DownloadDestination =
      row.text(2) == "file" ? .file(destinationPath) : .directory(destinationPath)
    let json = row.text(5) ?? ""
    var record = DownloadRecord(
      id: id, url: row.text(1) ?? "", destination: destination,
      options: StoredOptions.split(DownloadOptions()).0,
      secrets: SecretParts(rawValue: Int(row.int64(6))), state: state, position: row.int64(8),
      addedAt: row.double(16))
    if let cached = options[json] {
      record.shareOptions(with: cached)
    } else {
      guard let decoded = try? JSONDecoder().decode(StoredOptions.self, from: Data(json.utf8)) else {
        throw corrupt("bad options")
      }
      record.options = decoded
      options[json] = record
    }
    record.file = row.text(4)
    record.bytes = row.int64(9)
    record.totalBytes = row.optionalInt64(10)
    if let category = row.optionalInt64(11) {
      record.error = StoredError(
        category: Int32(truncatingIfNeeded: category), message: row.text(12) ?? "", hint: row.text(13))
    }
    record.sha256 = row.text(14)
    record.finalURL = row.text(15)
    record.finishedAt = row.optionalDouble(17)
    return record
  }
}
