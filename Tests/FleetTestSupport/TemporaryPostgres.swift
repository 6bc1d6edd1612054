import Foundation
import HaulTestSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A PostgreSQL server of a test process's own: `initdb` into a temporary directory, `postgres`
/// on a free 127.0.0.1 port, password authentication (scram) for the superuser `haul`.
///
/// ```swift
/// let server = try TemporaryPostgres.shared()
/// let url = try server.createDatabase()      // a fresh database per test
/// ```
///
/// Stopping is tied to the test process's life, on every exit path: the server runs under a
/// small shell that holds a pipe from this process; when the pipe closes (stop(), normal exit,
/// a crash, even SIGKILL) the shell shuts the server down fast (SIGINT, then SIGKILL to its
/// whole process group after 10 s) and deletes the directory. The server gets SIGINT when the
/// shell dies (`setpriv --pdeathsig`), and the shell stops it after `maxLifetime` whatever
/// happens. As root (CI), initdb and postgres refuse to run, so they run as `nobody`.
///
/// Nothing waits unbounded on it: test servers end any statement after `statementTimeout` and
/// any transaction left open after as long (a test blocked on a lock fails instead of hanging),
/// libpq and psql give up connecting after 10 s, and every test database is dropped, its
/// connections cut, `databaseLifetime` after it was created (a hung test's calls then fail).
public final class TemporaryPostgres: Sendable {
  public let port: Int
  /// The data directory's parent (deleted when the server stops).
  public let directory: String
  public static let user = "haul"
  public static let password = "haul-test-secret-7d1f"
  private let process: Subprocess
  /// The write end of the shell's standard input; closing it stops the server.
  private let lifeline: LockedBox<Int32>
  private let counter = Counter()

  /// Test servers' bound on any one statement, and on a transaction left idle.
  public static let statementTimeout = "60s"
  /// After this, a test database is dropped with its connections (no test lasts that long).
  public static let databaseLifetime: Double = 420
  /// After this, the shell stops the server whatever the test process is doing (HAUL_PG_MAX_SECONDS).
  public static var maxLifetime: Int {
    ProcessInfo.processInfo.environment["HAUL_PG_MAX_SECONDS"].flatMap(Int.init) ?? 3600
  }

  /// `postgresql://haul:PASSWORD@127.0.0.1:PORT/DATABASE`.
  public func url(database: String = "postgres", password: String = TemporaryPostgres.password) -> String {
    "postgresql://\(Self.user):\(password)@127.0.0.1:\(port)/\(database)"
  }

  /// Whether PostgreSQL's server programs are installed (`postgresql` on Debian).
  public static var isInstalled: Bool { binaryDirectory != nil }

  /// Under CI every tool must be present: a missing PostgreSQL fails instead of skipping.
  public static var mustRun: Bool { isInstalled || ProcessInfo.processInfo.environment["CI"] != nil }

  /// One server for the whole test process, started at first use.
  public static func shared() throws -> TemporaryPostgres {
    try sharedServer.withLock { server in
      if let server { return server }
      let started = try TemporaryPostgres()
      server = started
      return started
    }
  }

  private static let sharedServer = LockedBox<TemporaryPostgres?>(nil)

  /// A server of the caller's own (to stop it under a test's feet). `durable`: fsync and full
  /// page writes on, as in production (tests turn them off; benchmarks measure with them).
  public static func start(durable: Bool = false, settings: [String] = []) throws -> TemporaryPostgres {
    try TemporaryPostgres(durable: durable, settings: settings)
  }

  /// Creates an empty database and returns its URL. `databaseLifetime` later it is dropped,
  /// its connections cut, so a hung test fails instead of waiting forever.
  public func createDatabase() throws -> String {
    let name = "test_\(getpid())_\(counter.next())"
    try psql(["-d", url(), "-c", "CREATE DATABASE \(name)"])
    DispatchQueue.global().asyncAfter(deadline: .now() + Self.databaseLifetime) { [self] in
      _ = try? psql(["-d", url(), "-c", "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"])
    }
    return url(database: name)
  }

  /// Runs SQL in a database (for tests that need to look at or break the tables directly).
  @discardableResult
  public func psql(_ arguments: [String]) throws -> String {
    let binaries = try Self.requireBinaries()
    var environment = ProcessInfo.processInfo.environment
    environment["PGCONNECT_TIMEOUT"] = "10"
    environment["PGOPTIONS"] = "-c statement_timeout=\(Self.statementTimeout)"
    let output = try Subprocess.capture(
      binaries + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"] + arguments,
      environment: environment)
    guard output.termination == Termination(status: 0, signaled: false) else {
      throw Failure("psql \(arguments): \(output.stdoutText)\(output.stderrText)")
    }
    return output.stdoutText
  }

  /// Stops the server and deletes its directory (also happens when the process ends). Returns
  /// within about 10 s: the shell kills a server that does not shut down by then.
  public func stop() {
    lifeline.withLock { descriptor in
      if descriptor >= 0 { close(descriptor) }
      descriptor = -1
    }
    _ = process.waitUntilExit()
  }

  private init(durable: Bool = false, settings: [String] = []) throws {
    let binaries = try Self.requireBinaries()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("haul-pg-\(UUID().uuidString)")
      .path
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    let asRoot = geteuid() == 0
    let dropPrivileges =
      asRoot ? ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] : []
    // The server gets SIGINT (fast shutdown) if the shell that watches it dies.
    let hasSetpriv = FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    // Set after the change of user, which clears it (a second setpriv, as `nobody`).
    let tiedToShell = dropPrivileges + (hasSetpriv ? ["/usr/bin/setpriv", "--pdeathsig", "INT"] : [])
    let bounds =
      durable
      ? []
      : [
        "-c", "statement_timeout=\(Self.statementTimeout)",
        "-c", "idle_in_transaction_session_timeout=\(Self.statementTimeout)",
      ]
    if asRoot { _ = chown(root, 65534, 65534) }
    try Self.password.write(toFile: root + "/pwfile", atomically: true, encoding: .utf8)
    if asRoot { _ = chown(root + "/pwfile", 65534, 65534) }
    try Self.run(
      dropPrivileges + [
        binaries + "/initdb", "-D", root + "/data", "-U", Self.user, "--pwfile=" + root + "/pwfile",
        "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync",
        "--no-instructions",
      ])
    var lastError = ""
    for _ in 0..<3 {
      let port = try freeLoopbackPort()
      let server =
        tiedToShell + [
          binaries + "/postgres", "-D", root + "/data", "-p", String(port), "-k", root,
          "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
          "-c", "fsync=\(durable ? "on" : "off")", "-c", "full_page_writes=\(durable ? "on" : "off")",
          "-c", "log_min_messages=warning",
        ] + bounds + settings
      // The shell runs the server in a session of its own (setsid: one group with its
      // backends), waits for this process's pipe to close (or the lifetime to pass), then shuts
      // the server down: SIGINT (fast shutdown), and SIGKILL to the group if it is not gone
      // 10 s later; then removes everything. No helper process outlives it.
      let script = """
        setsid "$@" >"$0/server.log" 2>&1 </dev/null & pid=$!
        timeout "$HAUL_PG_LIFETIME" cat >/dev/null
        kill -INT "$pid" 2>/dev/null
        i=0
        while [ "$i" -lt 100 ] && [ -e "/proc/$pid" ] && ! grep -q '^State:.Z' "/proc/$pid/status" 2>/dev/null; do
          sleep 0.1; i=$((i + 1))
        done
        kill -KILL "-$pid" 2>/dev/null
        wait "$pid"
        rm -rf "$0"
        """
      var environment = ProcessInfo.processInfo.environment
      environment["HAUL_PG_LIFETIME"] = String(Self.maxLifetime)
      let (readEnd, writeEnd) = try Subprocess.makePipe()
      let ends = [readEnd, writeEnd]
      let process: Subprocess
      do {
        process = try Subprocess.spawn(
          "/bin/sh", ["-c", script, root] + server, environment: environment, stdin: ends[0])
      } catch {
        close(ends[0])
        close(ends[1])
        throw error
      }
      close(ends[0])
      if Self.waitUntilReady(binaries: binaries, port: port, process: process) {
        self.port = port
        self.directory = root
        self.process = process
        self.lifeline = LockedBox(ends[1])
        return
      }
      lastError = (try? String(contentsOfFile: root + "/server.log", encoding: .utf8)) ?? ""
      close(ends[1])
      _ = process.waitUntilExit()
      try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }
    try? FileManager.default.removeItem(atPath: root)
    throw Failure("postgres did not start: \(lastError)")
  }

  private static func waitUntilReady(binaries: String, port: Int, process: Subprocess) -> Bool {
    // A generous deadline only bounds a hang; no timing is asserted.
    let deadline = Date().addingTimeInterval(60)
    while process.isRunning, Date() < deadline {
      if (try? run([binaries + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", String(port)])) != nil {
        return true
      }
      usleep(50_000)
    }
    return false
  }

  /// PostgreSQL's server programs: HAUL_PG_BIN, else Debian's newest /usr/lib/postgresql/N/bin,
  /// else a Homebrew or /usr/local install.
  static var binaryDirectory: String? {
    if let dir = ProcessInfo.processInfo.environment["HAUL_PG_BIN"] { return dir }
    let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
    let candidates =
      versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
      + ["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin"]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
  }

  private static func requireBinaries() throws -> String {
    guard let directory = binaryDirectory else {
      throw Failure("PostgreSQL's server programs are not installed (Debian: apt-get install postgresql)")
    }
    return directory
  }

  private static func run(_ command: [String]) throws {
    let output = try Subprocess.capture(command[0], Array(command.dropFirst()))
    guard output.termination == Termination(status: 0, signaled: false) else {
      throw Failure("\(command.joined(separator: " ")): \(output.stdoutText)\(output.stderrText)")
    }
  }

  public struct Failure: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
  }
}

/// A value behind a lock (this target has no Haul dependency, so no `Locked`).
final class LockedBox<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}

private final class Counter: Sendable {
  private let value = LockedBox(0)
  func next() -> Int {
    value.withLock {
      $0 += 1; return $0
    }
  }
}
