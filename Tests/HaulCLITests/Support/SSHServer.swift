import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// OpenSSH's sshd on a free 127.0.0.1 port, from a temporary directory: its own host key, one
/// authorized client key, and the current user's login. SFTP is OpenSSH's sftp-server, whose log
/// (`sftp.log`) says how many bytes each opened file gave. `haul` runs with HOME in another
/// temporary directory, whose `.ssh` holds the client key (`id_ed25519`) and the host key
/// (`known_hosts`).
final class SSHServer: Sendable {
  static let sshd = "/usr/sbin/sshd"
  static let keygenTool = "/usr/bin/ssh-keygen"
  static let sftpServer = "/usr/lib/openssh/sftp-server"
  static var isInstalled: Bool {
    [sshd, keygenTool, sftpServer].allSatisfy { TestEnvironment.executable($0) != nil }
  }

  /// Configuration, keys and logs; the served files are in `files`.
  let root: TemporaryDirectory
  /// HOME for `haul`.
  let home: TemporaryDirectory
  let port: Int
  let user: String
  /// The authorized key (also `~/.ssh/id_ed25519` in `home`).
  var clientKey: URL { root.file("client_key") }
  private let process: ChildProcess

  private init(
    root: TemporaryDirectory, home: TemporaryDirectory, port: Int, user: String, process: ChildProcess
  ) {
    self.root = root
    self.home = home
    self.port = port
    self.user = user
    self.process = process
  }

  /// Makes an unencrypted ed25519 key pair at `url` and `url.pub`.
  static func keygen(_ url: URL) throws {
    let made = try TestEnvironment.runTool(
      keygenTool, ["-q", "-t", "ed25519", "-N", "", "-C", "", "-f", url.path])
    try #require(made.status == 0, "ssh-keygen failed: \(made)")
  }

  static func start() async throws -> SSHServer {
    let root = try TemporaryDirectory()
    let home = try TemporaryDirectory()
    let manager = FileManager.default
    try manager.createDirectory(at: root.file("files"), withIntermediateDirectories: true)
    try keygen(root.file("host_key"))
    try keygen(root.file("client_key"))
    try manager.copyItem(at: root.file("client_key.pub"), to: root.file("authorized_keys"))
    try manager.createDirectory(at: home.file(".ssh"), withIntermediateDirectories: true)
    try manager.copyItem(at: root.file("client_key"), to: home.file(".ssh/id_ed25519"))
    // sshd started by root wants its privilege separation directory (made by the init system).
    if getuid() == 0, !manager.fileExists(atPath: "/run/sshd") {
      try manager.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
    }
    let user = try #require(getpwuid(getuid())).pointee.pw_name.map { String(cString: $0) } ?? "root"
    for _ in 0..<3 {
      let port = try freeLoopbackPort()
      let config = """
        ListenAddress 127.0.0.1
        Port \(port)
        HostKey \(root.file("host_key").path)
        AuthorizedKeysFile \(root.file("authorized_keys").path)
        PidFile \(root.file("sshd.pid").path)
        UsePAM no
        StrictModes no
        PermitRootLogin prohibit-password
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        LogLevel VERBOSE
        Subsystem sftp \(sftpServer) -e -l INFO 2>>\(root.file("sftp.log").path)

        """
      try Data(config.utf8).write(to: root.file("sshd_config"))
      let process = try ChildProcess.start(
        URL(fileURLWithPath: sshd),
        ["-D", "-e", "-f", root.file("sshd_config").path, "-E", root.file("sshd.log").path])
      let deadline = ContinuousClock.now + .seconds(30)
      while process.isRunning, !TestEnvironment.isListening(port: port), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      if process.isRunning, TestEnvironment.isListening(port: port) {
        let server = SSHServer(root: root, home: home, port: port, user: user, process: process)
        try server.trust(publicKey: root.file("host_key.pub"))
        return server
      }
      process.signal(SIGKILL)
      _ = await process.wait()
    }
    let log = (try? String(contentsOf: root.file("sshd.log"), encoding: .utf8)) ?? ""
    Issue.record("sshd did not start: \(log)")
    throw CancellationError()
  }

  /// `sftp://USER[:PASSWORD]@127.0.0.1:PORT/…/files/NAME`.
  func url(_ name: String, password: String? = nil) -> String {
    let login = user + (password.map { ":" + $0 } ?? "")
    return "sftp://\(login)@127.0.0.1:\(port)\(root.file("files").path)/\(name)"
  }

  /// Writes `bytes` as `name` (a new file renamed over the old one) with this modification time.
  func publish(_ name: String, _ bytes: [UInt8], modified: Date) throws {
    let staging = root.file("files/.staging-\(name)")
    try Data(bytes).write(to: staging)
    try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: staging.path)
    try #require(rename(staging.path, root.file("files/\(name)").path) == 0, "rename failed: errno \(errno)")
  }

  /// Makes `~/.ssh/known_hosts` hold this public key (`TYPE BASE64 [COMMENT]`) for the server.
  func trust(publicKey: URL) throws {
    let fields = try String(contentsOf: publicKey, encoding: .utf8).split(separator: " ")
    let line =
      "[127.0.0.1]:\(port) \(fields[0]) \(fields[1].trimmingCharacters(in: .whitespacesAndNewlines))\n"
    try Data(line.utf8).write(to: home.file(".ssh/known_hosts"))
  }

  /// The host key's fingerprint as OpenSSH shows it (`SHA256:…`).
  func hostKeyFingerprint() throws -> String {
    let listed = try TestEnvironment.runTool(Self.keygenTool, ["-l", "-f", root.file("host_key.pub").path])
    return try #require(
      listed.stdout.split(separator: " ").first { $0.hasPrefix("SHA256:") }.map(String.init))
  }

  /// `haul` with this server's HOME (and no ssh-agent), run to its end.
  func haul(_ arguments: [String]) async throws -> ProcessOutcome {
    try await startHaul(arguments).wait()
  }

  func startHaul(_ arguments: [String]) throws -> ChildProcess {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    return try ChildProcess.start(
      binary, arguments, environment: ["HOME": home.url.path, "SSH_AUTH_SOCK": ""])
  }

  /// sftp-server's log so far.
  var sftpLog: String { (try? String(contentsOf: root.file("sftp.log"), encoding: .utf8)) ?? "" }

  /// Waits until every SFTP session so far has ended (and logged what it read); returns the
  /// log's length then.
  func settledLog() async throws -> Int {
    let deadline = ContinuousClock.now + .seconds(30)
    while true {
      let log = sftpLog
      let opened = log.components(separatedBy: "session opened").count
      if opened == log.components(separatedBy: "session closed").count { return log.utf8.count }
      guard ContinuousClock.now < deadline else {
        Issue.record("an SFTP session did not end: \(log)")
        throw CancellationError()
      }
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  /// The bytes sftp-server read from files, and the sessions it had, after the log's first
  /// `offset` bytes (once every session has ended).
  func reads(after offset: Int) async throws -> (bytes: Int64, sessions: Int) {
    _ = try await settledLog()
    let text = String(decoding: Array(sftpLog.utf8).dropFirst(offset), as: UTF8.self)
    var bytes: Int64 = 0
    var sessions = 0
    // OpenSSH ends its log lines with CRLF, a single Character in Swift.
    for line in text.split(whereSeparator: \.isNewline) {
      if line.contains("session opened") { sessions += 1 }
      guard line.hasPrefix("close "), let range = line.range(of: " bytes read ") else { continue }
      bytes += Int64(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }
    return (bytes, sessions)
  }

  func stop() { process.signal(SIGKILL) }
}
