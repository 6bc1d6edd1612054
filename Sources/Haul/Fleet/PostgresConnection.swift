import CPostgres

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One libpq connection. Not thread-safe: exactly one thread uses it at a time (the owner of a
/// `PostgresClient`, or a benchmark's own thread). Every call blocks until the server answers.
package final class PostgresConnection {
  private let handle: OpaquePointer
  let address: PostgresAddress

  /// Loads libpq if needed and connects.
  /// - Throws: `HaulError`: `.generic` when libpq is missing, `.network` when the server cannot be
  ///   reached, `.authentication` when it refuses the credentials, `.invalidInput` for a database that
  ///   does not exist.
  package init(_ address: PostgresAddress, applicationName: String = "haul") throws(HaulError) {
    try PostgresLibrary.load()
    // Earlier keywords are defaults: the URL (expanded from dbname) overrides any of them.
    let settings: [(String, String)] = [
      ("connect_timeout", "10"),
      ("tcp_user_timeout", "20000"),
      ("keepalives_idle", "30"),
      ("client_encoding", "UTF8"),
      ("fallback_application_name", applicationName),
      ("dbname", address.connectionString),
    ]
    let connection = withCStrings(settings.map(\.0)) { keywords in
      withCStrings(settings.map(\.1)) { values in cpq_connect(keywords, values) }
    }
    guard let connection else { throw HaulError(.generic, "out of memory connecting to PostgreSQL") }
    guard cpq_status(connection) == Int32(CPQ_CONNECTION_OK) else {
      let reason = address.scrubbed(Self.trimmed(String(cString: cpq_error_message(connection))))
      cpq_finish(connection)
      throw PostgresError.connectFailed(address: address, reason: reason).haulError(address)
    }
    cpq_silence_notices(connection)
    self.handle = connection
    self.address = address
  }

  deinit { cpq_finish(handle) }

  /// False once the server went away; a new connection is needed.
  var isUsable: Bool { cpq_status(handle) == Int32(CPQ_CONNECTION_OK) }

  /// Inside a transaction that a failed statement aborted (only ROLLBACK works now).
  var isInFailedTransaction: Bool { cpq_transaction_status(handle) == Int32(CPQ_PQTRANS_INERROR) }

  var serverVersion: Int { Int(cpq_server_version(handle)) }

  /// Runs one statement; `parameters` are bound to $1…$n as text, never spliced into `sql`.
  @discardableResult
  package func query(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) throws(PostgresError)
    -> PostgresRows
  {
    let texts = parameters.map { $0?.postgresText }
    let result: OpaquePointer? = withCStrings(texts) { values in
      cpq_exec(handle, sql, Int32(texts.count), values)
    }
    guard let result else {
      throw PostgresError.failed(sqlState: nil, message: connectionErrorText(), lostConnection: !isUsable)
    }
    defer { cpq_clear(result) }
    switch Int(cpq_result_status(result)) {
    case CPQ_PGRES_COMMAND_OK, CPQ_PGRES_TUPLES_OK, CPQ_PGRES_EMPTY_QUERY:
      return PostgresRows(result)
    default:
      let sqlState = cpq_result_error_field(result, Int32(CPQ_DIAG_SQLSTATE)).map { String(cString: $0) }
      var message = cpq_result_error_field(result, Int32(CPQ_DIAG_MESSAGE_PRIMARY)).map {
        String(cString: $0)
      }
      if message?.isEmpty ?? true {
        message = Self.trimmed(String(cString: cpq_result_error_message(result)))
      }
      if message?.isEmpty ?? true { message = connectionErrorText() }
      throw PostgresError.failed(
        sqlState: sqlState, message: address.scrubbed(message ?? "unknown error"), lostConnection: !isUsable)
    }
  }

  /// Runs `body` inside BEGIN … COMMIT; rolls back when it throws.
  func transaction<T>(_ body: () throws(PostgresError) -> T) throws(PostgresError) -> T {
    try query("BEGIN")
    do {
      let value = try body()
      try query("COMMIT")
      return value
    } catch {
      if isUsable { _ = try? query("ROLLBACK") }
      throw error
    }
  }

  private func connectionErrorText() -> String {
    address.scrubbed(Self.trimmed(String(cString: cpq_error_message(handle))))
  }

  private static func trimmed(_ text: String) -> String {
    // libpq's messages end in a newline and sometimes carry a second "DETAIL:"-style line.
    text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.joined(separator: "; ")
  }
}

/// The text values of one statement's result, copied out of libpq's memory.
package struct PostgresRows: Sendable {
  let columns: Int
  private let values: [String?]
  /// Rows an INSERT, UPDATE or DELETE touched.
  let affected: Int

  package var count: Int { columns == 0 ? 0 : values.count / columns }

  fileprivate init(_ result: OpaquePointer) {
    let rows = Int(cpq_ntuples(result))
    columns = Int(cpq_nfields(result))
    var values: [String?] = []
    values.reserveCapacity(rows * columns)
    for row in 0..<Int32(rows) {
      for column in 0..<Int32(columns) {
        values.append(
          cpq_getisnull(result, row, column) != 0 ? nil : String(cString: cpq_getvalue(result, row, column)))
      }
    }
    self.values = values
    affected = Int(String(cString: cpq_cmd_tuples(result))) ?? 0
  }

  init(columns: Int, values: [String?]) {
    self.columns = columns
    self.values = values
    self.affected = 0
  }

  package subscript(row: Int, column: Int) -> String? { values[row * columns + column] }

  func row(_ index: Int) -> PostgresRow { PostgresRow(rows: self, index: index) }

  var all: [PostgresRow] { (0..<count).map(row) }
}

/// One row of a result, read by column position.
struct PostgresRow: Sendable {
  let rows: PostgresRows
  let index: Int

  func text(_ column: Int) -> String? { rows[index, column] }
  func int(_ column: Int) -> Int64? { text(column).flatMap { Int64($0) } }
  func double(_ column: Int) -> Double? { text(column).flatMap { Double($0) } }
  func bool(_ column: Int) -> Bool? { text(column).map { $0 == "t" } }
}

/// A value that can be bound as a statement parameter (sent as text).
package protocol PostgresBindable: Sendable {
  var postgresText: String { get }
}

extension String: PostgresBindable { package var postgresText: String { self } }
extension Int: PostgresBindable { package var postgresText: String { String(self) } }
extension Int64: PostgresBindable { package var postgresText: String { String(self) } }
extension Int32: PostgresBindable { package var postgresText: String { String(self) } }
extension Double: PostgresBindable { package var postgresText: String { String(self) } }
extension Bool: PostgresBindable { package var postgresText: String { self ? "true" : "false" } }

/// A text[] parameter: PostgreSQL's array literal, every element quoted and escaped (bound, not spliced).
struct PostgresTextArray: PostgresBindable {
  let elements: [String?]

  init(_ elements: [String?]) { self.elements = elements }

  var postgresText: String {
    var text = "{"
    for (index, element) in elements.enumerated() {
      if index > 0 { text += "," }
      guard let element else {
        text += "NULL"
        continue
      }
      text += "\""
      for character in element.unicodeScalars {
        if character == "\"" || character == "\\" { text += "\\" }
        text.unicodeScalars.append(character)
      }
      text += "\""
    }
    return text + "}"
  }
}

/// A failed statement or connection, before it is turned into a `HaulError` for the caller.
package enum PostgresError: Error, Sendable {
  case connectFailed(address: PostgresAddress, reason: String)
  /// `sqlState` is the five-character SQLSTATE when the server sent one.
  case failed(sqlState: String?, message: String, lostConnection: Bool)

  var lostConnection: Bool {
    switch self {
    case .connectFailed: true
    case .failed(_, _, let lost): lost
    }
  }

  var sqlState: String? {
    if case .failed(let state, _, _) = self { state } else { nil }
  }
}

/// Loads libpq once, with an error that says what to install.
enum PostgresLibrary {
  /// Set to load another file (tests; or a libpq in an unusual place).
  static let pathVariable = "HAUL_LIBPQ"

  static func load() throws(HaulError) {
    var buffer = [CChar](repeating: 0, count: 512)
    let path = getenv(pathVariable).map { String(cString: $0) }
    guard cpq_load(path, &buffer, buffer.count) == 0 else { return }
    let reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    throw HaulError(
      .generic, "the PostgreSQL client library (libpq) could not be loaded: \(reason)",
      hint:
        "--queue needs libpq: install it (Debian/Ubuntu: apt-get install libpq5; Fedora: dnf install libpq; macOS: brew install libpq)"
    )
  }

  /// "15.14" when libpq is loaded, else nil.
  static var version: String? {
    let number = Int(cpq_lib_version())
    guard number > 0 else { return nil }
    return "\(number / 10000).\(number % 10000)"
  }
}

/// NUL-terminated C copies of `strings`, as a NULL-terminated array (a NULL entry is SQL NULL).
private func withCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R
{
  let copies = strings.map { $0.flatMap { strdup($0) } } + [nil]
  defer { copies.forEach { free($0) } }
  return copies.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { body($0.baseAddress) }
}

extension PostgresError {
  /// The error for a person: what failed, against which (redacted) address, and what to do.
  package func haulError(_ address: PostgresAddress) -> HaulError {
    switch self {
    case .connectFailed(_, let reason):
      let lowered = reason.lowercased()
      if lowered.contains("password authentication failed") || lowered.contains("no password supplied")
        || lowered.contains("authentication failed")
      {
        return HaulError(
          .authentication, "PostgreSQL at \(address) refused the credentials: \(reason)",
          hint: "check the user name and password in the queue URL", underlying: self)
      }
      if lowered.contains("does not exist"), lowered.contains("database") {
        return HaulError(
          .invalidInput, "PostgreSQL at \(address): \(reason)",
          hint: "create the database first (createdb NAME) or name another one in the queue URL",
          underlying: self)
      }
      return HaulError(
        .network, "cannot connect to PostgreSQL at \(address): \(reason)",
        hint: "check that the server runs and is reachable from here (pg_isready -h HOST -p PORT)",
        underlying: self)
    case .failed(let state, let message, let lost):
      let statePart = state.map { " (SQLSTATE \($0))" } ?? ""
      if lost || state?.hasPrefix("08") == true || state?.hasPrefix("57P") == true {
        return HaulError(
          .network, "lost the connection to PostgreSQL at \(address): \(message)",
          hint: "haul reconnects by itself; check the server if this repeats", underlying: self)
      }
      if state?.hasPrefix("28") == true {
        return HaulError(
          .authentication, "PostgreSQL at \(address): \(message)\(statePart)", underlying: self)
      }
      if state == "42501" {
        return HaulError(
          .generic, "PostgreSQL at \(address): \(message)\(statePart)",
          hint: "the queue's user needs CREATE on the database once (to make the haul schema), then "
            + "SELECT, INSERT, UPDATE, DELETE on its tables", underlying: self)
      }
      if state?.hasPrefix("53") == true {
        return HaulError(
          .network, "PostgreSQL at \(address) is out of resources: \(message)\(statePart)",
          hint: "raise max_connections, or put PgBouncer (transaction mode) in front", underlying: self)
      }
      return HaulError(.generic, "PostgreSQL at \(address): \(message)\(statePart)", underlying: self)
    }
  }
}
