import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// nginx or lighttpd, started by a test as its own child process from a template in `Tests/Interop`,
/// serving files from a temporary directory on free 127.0.0.1 ports.
final class RealServer: Sendable {
  enum Kind: String, Sendable, CustomStringConvertible {
    case nginx, lighttpd
    var description: String { rawValue }

    var binary: URL? {
      switch self {
      case .nginx: TestEnvironment.executable("/usr/sbin/nginx")
      case .lighttpd: TestEnvironment.executable("/usr/sbin/lighttpd")
      }
    }

    /// Run this kind's tests: it is installed, or we are under CI, where a missing server must fail.
    var shouldTest: Bool { binary != nil || TestEnvironment.isCI }
  }

  /// One line of the access log: `METHOD URI STATUS "RANGE" "IF-RANGE" BODY-BYTES`.
  struct LogLine: Sendable, CustomStringConvertible {
    let method: String
    let uri: String
    let status: Int
    /// The Range header, or nil.
    let range: String?
    /// The If-Range header as the server logged it (quotes may be escaped), or nil.
    let ifRange: String?
    let bodyBytes: Int
    let description: String
  }

  let kind: Kind
  let prefix: TemporaryDirectory
  let port: Int
  let slowPort: Int
  let tlsPort: Int?
  private let process: ChildProcess

  /// A test that failed before `stop()` leaves no server (nor its workers) running.
  deinit { if process.isRunning { process.signalGroup(SIGKILL) } }

  var root: URL { prefix.file("root") }

  private init(
    kind: Kind, prefix: TemporaryDirectory, port: Int, slowPort: Int, tlsPort: Int?, process: ChildProcess
  ) {
    self.kind = kind
    self.prefix = prefix
    self.port = port
    self.slowPort = slowPort
    self.tlsPort = tlsPort
    self.process = process
  }

  static let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Interop")

  /// Starts the server; with `tls`, an HTTPS server too (nginx only), with a self-signed
  /// certificate for 127.0.0.1 made by the `openssl` command.
  static func start(_ kind: Kind, tls: Bool = false) async throws -> RealServer {
    let binary = try #require(
      kind.binary,
      "\(kind) is not installed (Debian: apt-get install \(kind == .nginx ? "nginx-light" : "lighttpd"))")
    precondition(!tls || kind == .nginx, "only the nginx configuration has an HTTPS server")
    let prefix = try TemporaryDirectory()
    let fileManager = FileManager.default
    try fileManager.createDirectory(at: prefix.file("root"), withIntermediateDirectories: true)
    try fileManager.createDirectory(at: prefix.file("tmp"), withIntermediateDirectories: true)
    if tls { try makeCertificate(in: prefix) }
    let template = try String(
      contentsOf: templates.appendingPathComponent("\(kind).conf"), encoding: .utf8)
    var lastFailure = ""
    // A port found free may be taken before the server binds it: try a few times.
    for _ in 0..<3 {
      let port = try freeLoopbackPort()
      let slowPort = try freeLoopbackPort()
      let tlsPort = tls ? try freeLoopbackPort() : nil
      var config =
        template
        .replacingOccurrences(of: "@PREFIX@", with: prefix.url.path)
        .replacingOccurrences(of: "@ROOT@", with: prefix.file("root").path)
        .replacingOccurrences(of: "@PORT@", with: String(port))
        .replacingOccurrences(of: "@SLOW_PORT@", with: String(slowPort))
        .replacingOccurrences(of: "@TLS_PORT@", with: String(tlsPort ?? 0))
        .replacingOccurrences(of: "@USER@", with: getuid() == 0 ? "user root;" : "")
      if !tls { config = withoutTLSServer(config) }
      let configFile = prefix.file("\(kind).conf")
      try config.write(to: configFile, atomically: true, encoding: .utf8)
      let arguments: [String] =
        switch kind {
        case .nginx:
          [
            "-p", prefix.url.path, "-c", configFile.path, "-g",
            "daemon off; pid \(prefix.url.path)/nginx.pid;",
          ]
        case .lighttpd:
          ["-D", "-f", configFile.path]
        }
      let process = try ChildProcess.start(binary, arguments, newSession: true)
      let ports = [port, slowPort] + (tlsPort.map { [$0] } ?? [])
      // Wait until it listens or exits (no wall-time assertion: a generous deadline only bounds a hang).
      let deadline = ContinuousClock.now + .seconds(30)
      while process.isRunning, !ports.allSatisfy(TestEnvironment.isListening(port:)),
        ContinuousClock.now < deadline
      {
        try await Task.sleep(for: .milliseconds(20))
      }
      if process.isRunning, ports.allSatisfy(TestEnvironment.isListening(port:)) {
        return RealServer(
          kind: kind, prefix: prefix, port: port, slowPort: slowPort, tlsPort: tlsPort, process: process)
      }
      process.signal(SIGKILL)
      let outcome = await process.wait()
      let errorLog = (try? String(contentsOf: prefix.file("error.log"), encoding: .utf8)) ?? ""
      lastFailure = "\(outcome)\n--- error.log\n\(errorLog)"
    }
    throw ServerStartFailure(kind: kind, details: lastFailure)
  }

  struct ServerStartFailure: Error, CustomStringConvertible {
    let kind: Kind
    let details: String
    var description: String { "\(kind) did not start:\n\(details)" }
  }

  private static func withoutTLSServer(_ config: String) -> String {
    var lines: [Substring] = []
    var skipping = false
    for line in config.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.contains("# HTTPS with") { skipping = true }
      if skipping, line == "  }" {
        skipping = false
        continue
      }
      if !skipping { lines.append(line) }
    }
    return lines.joined(separator: "\n")
  }

  private static func makeCertificate(in prefix: TemporaryDirectory) throws {
    let openssl = try #require(
      TestEnvironment.executable("/usr/bin/openssl"), "the openssl command is not installed (Debian: openssl)"
    )
    let outcome = try TestEnvironment.runTool(
      openssl.path,
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", prefix.file("key.pem").path, "-out", prefix.file("cert.pem").path, "-days", "2",
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
      ])
    try #require(outcome.status == 0, "openssl could not make a certificate: \(outcome)")
  }

  func url(_ name: String, slow: Bool = false) -> String {
    "http://127.0.0.1:\(slow ? slowPort : port)/\(name)"
  }

  func httpsURL(_ name: String) -> String { "https://127.0.0.1:\(tlsPort ?? 0)/\(name)" }

  /// Publishes `bytes` as `name` atomically (a new file renamed over the old one, as deployments do),
  /// with the given modification time so that the server's validators change with it.
  func publish(_ name: String, _ bytes: [UInt8], modified: Date) throws {
    let staging = prefix.file("staging-\(name)")
    try Data(bytes).write(to: staging)
    try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: staging.path)
    try #require(
      rename(staging.path, root.appendingPathComponent(name).path) == 0, "rename failed: errno \(errno)")
  }

  /// Stops the server (logs are complete afterwards).
  @discardableResult
  func stop() async -> ProcessOutcome {
    process.signal(SIGTERM)
    // Never hang a test run on a server that ignores SIGTERM.
    let watchdog = Task { [process] in
      try await Task.sleep(for: .seconds(20))
      process.signal(SIGKILL)
    }
    let outcome = await process.wait()
    watchdog.cancel()
    process.signalGroup(SIGKILL)  // workers the master left behind
    return outcome
  }

  /// The GET requests of the access log so far (complete only after `stop()`).
  func accessLog() -> [LogLine] {
    let text = (try? String(contentsOf: prefix.file("access.log"), encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { Self.parse(String($0)) }.filter { $0.method == "GET" }
  }

  /// The ETag the server now sends for `name` (by HEAD, which `accessLog()` leaves out).
  func currentETag(_ name: String) throws -> String? {
    try RawHTTPConnection(port: port).request(method: "HEAD", path: "/\(name)").header("ETag")
  }

  /// Publishes a new version of `name` and waits until the server answers with a new ETag
  /// (lighttpd caches file metadata for about a second; a resume inside that window would be
  /// answered for the old version).
  func replace(_ name: String, with bytes: [UInt8], modified: Date) async throws {
    let old = try currentETag(name)
    try publish(name, bytes, modified: modified)
    let deadline = ContinuousClock.now + .seconds(30)
    while try currentETag(name) == old, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    try #require(
      try currentETag(name) != old, "\(kind) kept the old ETag \(old ?? "none") after the file was replaced")
  }

  func errorLog() -> String {
    (try? String(contentsOf: prefix.file("error.log"), encoding: .utf8)) ?? ""
  }

  /// `METHOD URI STATUS "RANGE" "IF-RANGE" BYTES`; the If-Range value may itself hold (escaped) quotes.
  static func parse(_ line: String) -> LogLine? {
    let fields = line.split(separator: " ", maxSplits: 3)
    guard fields.count == 4, let status = Int(fields[2]) else { return nil }
    let rest = fields[3]
    guard let lastSpace = rest.lastIndex(of: " ") else { return nil }
    let bodyBytes = Int(rest[rest.index(after: lastSpace)...]) ?? 0
    let quoted = rest[..<lastSpace]
    // "RANGE" "IF-RANGE": the range holds no quotes, so it ends at the second quote.
    guard quoted.hasPrefix("\""), let rangeEnd = quoted.dropFirst().firstIndex(of: "\"") else { return nil }
    let range = String(quoted[quoted.index(after: quoted.startIndex)..<rangeEnd])
    var ifRange = String(quoted[quoted.index(after: rangeEnd)...]).trimmingCharacters(in: .whitespaces)
    if ifRange.hasPrefix("\""), ifRange.hasSuffix("\""), ifRange.count >= 2 {
      ifRange = String(ifRange.dropFirst().dropLast())
    }
    func present(_ value: String) -> String? { value.isEmpty || value == "-" ? nil : value }
    return LogLine(
      method: String(fields[0]), uri: String(fields[1]), status: status, range: present(range),
      ifRange: present(ifRange), bodyBytes: bodyBytes,
      description: line)
  }
}
