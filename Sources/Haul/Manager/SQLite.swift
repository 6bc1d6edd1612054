import CSQLite

/// A failed SQLite call: the extended result code, SQLite's own message, and the errno of the
/// system call that failed (0 when none did or SQLite did not keep it).
struct SQLiteError: Error, Sendable, CustomStringConvertible {
  let code: Int32
  let message: String
  var systemErrno: Int32 = 0

  /// The primary result code (SQLITE_FULL, SQLITE_CORRUPT …).
  var primary: Int32 { code & 0xFF }

  var description: String {
    systemErrno == 0
      ? "\(message) (SQLite error \(code))" : "\(message) (SQLite error \(code), errno \(systemErrno))"
  }
}

/// One SQLite connection. Not thread-safe: its owner uses it from one thread at a time
/// (the catalog's executor).
final class SQLiteConnection {
  private let db: OpaquePointer

  /// Opens `path` with `flags` (SQLITE_OPEN_*); extended result codes are on.
  init(path: String, flags: Int32) throws(SQLiteError) {
    var handle: OpaquePointer?
    let status = sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_EXRESCODE, nil)
    guard status == SQLITE_OK, let handle else {
      let message =
        handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
      let systemErrno = handle.map { sqlite3_system_errno($0) } ?? 0
      sqlite3_close_v2(handle)
      throw SQLiteError(code: status, message: message, systemErrno: systemErrno)
    }
    db = handle
  }

  deinit { sqlite3_close_v2(db) }

  private func error(_ status: Int32) -> SQLiteError {
    SQLiteError(
      code: status, message: String(cString: sqlite3_errmsg(db)), systemErrno: sqlite3_system_errno(db))
  }

  /// Runs one or more statements that return no rows.
  func execute(_ sql: String) throws(SQLiteError) {
    let status = sqlite3_exec(db, sql, nil, nil, nil)
    guard status == SQLITE_OK else { throw error(status) }
  }

  func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
    var statement: OpaquePointer?
    let status = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    guard status == SQLITE_OK, let statement else { throw error(status) }
    return SQLiteStatement(statement, connection: self)
  }

  /// The first column of the first row of `sql` as text (for pragmas), nil when no row.
  func text(_ sql: String) throws(SQLiteError) -> String? {
    let statement = try prepare(sql)
    return try statement.step() ? statement.text(0) : nil
  }

  func integer(_ sql: String) throws(SQLiteError) -> Int64? {
    let statement = try prepare(sql)
    return try statement.step() ? statement.int64(0) : nil
  }

  /// Sets one of the SQLITE_DBCONFIG_* switches.
  func configure(_ option: Int32, _ on: Bool) throws(SQLiteError) {
    let status = csqlite_db_config_flag(db, option, on ? 1 : 0)
    guard status == SQLITE_OK else { throw error(status) }
  }

  /// Runs `body` in one write transaction (taken at once, so it cannot fail half way for a
  /// lock); rolls back if `body` or the commit fails.
  ///
  /// `durable: false` (WAL only): the commit returns before it is on disk (`synchronous =
  /// NORMAL`, no fsync). The next durable commit syncs it with its own, and a crash before that
  /// loses it whole, never part of it: WAL frames are replayed in order, up to the last valid
  /// commit. For what a crash may lose (a claim, progress numbers), not for what it may not.
  func transaction<T>(durable: Bool = true, _ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
    guard durable else {
      try execute("PRAGMA synchronous = NORMAL")
      do {
        let result = try transaction(body)
        try execute("PRAGMA synchronous = FULL")
        return result
      } catch {
        _ = sqlite3_exec(db, "PRAGMA synchronous = FULL", nil, nil, nil)
        throw error
      }
    }
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      // A failed COMMIT (disk full) may leave the transaction open; a failed statement may have
      // rolled it back already.
      if sqlite3_get_autocommit(db) == 0 { _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
      throw error
    }
  }

  fileprivate func failure(_ status: Int32) -> SQLiteError { error(status) }
}

/// A prepared statement, reused: `reset` after each use. Bind indices start at 1, columns at 0.
final class SQLiteStatement {
  private let statement: OpaquePointer
  private let connection: SQLiteConnection

  fileprivate init(_ statement: OpaquePointer, connection: SQLiteConnection) {
    self.statement = statement
    self.connection = connection
  }

  deinit { sqlite3_finalize(statement) }

  /// Binds values to ?1, ?2 … in order (nil binds NULL).
  @discardableResult
  func bind(_ values: SQLiteValue?...) throws(SQLiteError) -> SQLiteStatement {
    sqlite3_reset(statement)
    sqlite3_clear_bindings(statement)
    for (offset, value) in values.enumerated() {
      let index = Int32(offset + 1)
      let status: Int32
      switch value {
      case nil: status = sqlite3_bind_null(statement, index)
      case .integer(let number)?: status = sqlite3_bind_int64(statement, index, number)
      case .real(let number)?: status = sqlite3_bind_double(statement, index, number)
      case .text(let text)?:
        var text = text
        status = text.withUTF8 { bytes in
          bytes.withMemoryRebound(to: CChar.self) {
            csqlite_bind_text(statement, index, $0.baseAddress, Int32($0.count))
          }
        }
      }
      guard status == SQLITE_OK else { throw connection.failure(status) }
    }
    return self
  }

  /// Steps once: true when a row is ready, false when done.
  func step() throws(SQLiteError) -> Bool {
    let status = sqlite3_step(statement)
    switch status {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default: throw connection.failure(status)
    }
  }

  /// Runs a statement that returns no rows.
  func run() throws(SQLiteError) {
    while try step() {}
    sqlite3_reset(statement)
  }

  func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

  func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

  func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

  func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }

  func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }

  func text(_ column: Int32) -> String? {
    guard let bytes = sqlite3_column_text(statement, column) else { return nil }
    let count = Int(sqlite3_column_bytes(statement, column))
    return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  }
}

/// A value bound to a statement.
enum SQLiteValue {
  case integer(Int64)
  case real(Double)
  case text(String)
}

extension SQLiteValue {
  static func int(_ value: Int64?) -> SQLiteValue? { value.map { .integer($0) } }
  static func string(_ value: String?) -> SQLiteValue? { value.map { .text($0) } }
  static func double(_ value: Double?) -> SQLiteValue? { value.map { .real($0) } }
}
