import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A private CA (made by the `openssl` command): its server is reached with `--cacert`,
/// `--capath` or the environment curl reads, never only with `--insecure`; a server that wants
/// a client certificate gets one with `--cert`/`--key`.
@Suite(
  "TLS trust and client certificates", .timeLimit(.minutes(3)),
  .enabled(
    if: (RealServer.Kind.nginx.shouldTest && TestEnvironment.executable("/usr/bin/openssl") != nil)
      || TestEnvironment.isCI, "nginx or openssl is not installed (Debian: nginx-light, openssl); skipped"))
struct TLSTrustTests {
  @Test func privateCertificateAuthority() async throws {
    let server = try await PrivateCAServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 300_000, seed: 71)
    try Data(body).write(to: server.root.appendingPathComponent("t.bin"))
    let directory = try TemporaryDirectory()
    let target = directory.file("t.bin").path
    let url = server.url("t.bin")
    func fetch(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessOutcome {
      try? FileManager.default.removeItem(atPath: target)
      // No variable of the machine's own may decide the outcome.
      let clean = ["CURL_CA_BUNDLE": "", "SSL_CERT_DIR": "", "SSL_CERT_FILE": ""].merging(environment) { $1 }
      return try await CurlFlagsEndToEndTests.haul(
        ["-q", "-o", target] + arguments + [url], environment: clean)
    }

    let refused = try await fetch([])
    #expect(refused.status == 5, "the system's bundle does not know this CA: \(refused)")
    #expect(
      refused.stderr.contains(
        "the server's certificate could not be verified; --insecure skips the check (unsafe)"), "\(refused)")

    for (arguments, environment) in [
      (["--cacert", server.caFile.path], [:]),
      (["--capath", server.caDirectory.path], [:]),
      ([], ["SSL_CERT_FILE": server.caFile.path]),
      ([], ["SSL_CERT_DIR": server.caDirectory.path]),
      ([], ["CURL_CA_BUNDLE": server.caFile.path]),
      // CURL_CA_BUNDLE comes first, as in curl.
      ([], ["CURL_CA_BUNDLE": server.caFile.path, "SSL_CERT_FILE": server.otherCAFile.path]),
    ] as [([String], [String: String])] {
      let outcome = try await fetch(arguments, environment: environment)
      #expect(outcome.status == 0, "\(arguments) \(environment): \(outcome)")
      expectBytes(directory.contents("t.bin"), equal: body, "\(arguments) \(environment)")
    }

    // An explicit --cacert wins over the environment: the other CA does not sign this server.
    let explicit = try await fetch(
      ["--cacert", server.otherCAFile.path], environment: ["SSL_CERT_FILE": server.caFile.path])
    #expect(explicit.status == 5, "\(explicit)")
    #expect(!directory.exists("t.bin") && !directory.exists("t.bin.part"))
  }

  @Test func clientCertificate() async throws {
    let server = try await PrivateCAServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 100_000, seed: 72)
    try Data(body).write(to: server.root.appendingPathComponent("m.bin"))
    let directory = try TemporaryDirectory()
    let target = directory.file("m.bin").path
    let url = server.url("m.bin", mutual: true)

    let anonymous = try await CurlFlagsEndToEndTests.haul([
      "-q", "--cacert", server.caFile.path, "-o", target, url,
    ])
    #expect(anonymous.status == 8, "nginx answers 400 without a client certificate: \(anonymous)")

    let identified = try await CurlFlagsEndToEndTests.haul([
      "-q", "--cacert", server.caFile.path, "--cert", server.clientCertificate.path, "--key",
      server.clientKey.path, "-o", target, url,
    ])
    #expect(identified.status == 0, "\(identified)")
    expectBytes(directory.contents("m.bin"), equal: body)
  }
}

/// nginx with a certificate signed by a CA of the test's own, on two HTTPS ports: one plain,
/// one that requires a client certificate signed by the same CA (`ssl_verify_client on`).
final class PrivateCAServer: Sendable {
  let prefix: TemporaryDirectory
  let port: Int
  let mutualPort: Int
  private let process: ChildProcess

  /// A test that failed before `stop()` leaves no server (nor its workers) running.
  deinit { if process.isRunning { process.signalGroup(SIGKILL) } }

  var root: URL { prefix.file("root") }
  var caFile: URL { prefix.file("ca.pem") }
  var otherCAFile: URL { prefix.file("other-ca.pem") }
  var caDirectory: URL { prefix.file("cas") }
  var clientCertificate: URL { prefix.file("client.pem") }
  var clientKey: URL { prefix.file("client.key") }

  private init(prefix: TemporaryDirectory, port: Int, mutualPort: Int, process: ChildProcess) {
    self.prefix = prefix
    self.port = port
    self.mutualPort = mutualPort
    self.process = process
  }

  func url(_ name: String, mutual: Bool = false) -> String {
    "https://127.0.0.1:\(mutual ? mutualPort : port)/\(name)"
  }

  static func start() async throws -> PrivateCAServer {
    let nginx = try #require(RealServer.Kind.nginx.binary, "nginx is not installed (Debian: nginx-light)")
    let prefix = try TemporaryDirectory()
    for name in ["root", "tmp", "cas"] {
      try FileManager.default.createDirectory(at: prefix.file(name), withIntermediateDirectories: true)
    }
    try makeCertificates(in: prefix)
    var lastFailure = ""
    for _ in 0..<3 {
      let port = try freeLoopbackPort()
      let mutualPort = try freeLoopbackPort()
      let path = prefix.url.path
      let config = """
        \(getuid() == 0 ? "user root;" : "")
        worker_processes 1;
        error_log \(path)/error.log info;
        events { worker_connections 64; }
        http {
          access_log \(path)/access.log;
          client_body_temp_path \(path)/tmp/body;
          proxy_temp_path \(path)/tmp/proxy;
          fastcgi_temp_path \(path)/tmp/fastcgi;
          uwsgi_temp_path \(path)/tmp/uwsgi;
          scgi_temp_path \(path)/tmp/scgi;
          ssl_certificate \(path)/server.pem;
          ssl_certificate_key \(path)/server.key;
          server { listen 127.0.0.1:\(port) ssl; root \(path)/root; }
          server {
            listen 127.0.0.1:\(mutualPort) ssl;
            root \(path)/root;
            ssl_client_certificate \(path)/ca.pem;
            ssl_verify_client on;
          }
        }
        """
      try config.write(to: prefix.file("nginx.conf"), atomically: true, encoding: .utf8)
      let process = try ChildProcess.start(
        nginx,
        ["-p", path, "-c", prefix.file("nginx.conf").path, "-g", "daemon off; pid \(path)/nginx.pid;"],
        newSession: true)
      let deadline = ContinuousClock.now + .seconds(30)
      func listening() -> Bool { [port, mutualPort].allSatisfy(TestEnvironment.isListening(port:)) }
      while process.isRunning, !listening(), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      if process.isRunning, listening() {
        return PrivateCAServer(prefix: prefix, port: port, mutualPort: mutualPort, process: process)
      }
      process.signal(SIGKILL)
      lastFailure =
        "\(await process.wait())\n"
        + ((try? String(contentsOf: prefix.file("error.log"), encoding: .utf8)) ?? "")
    }
    Issue.record("nginx did not start: \(lastFailure)")
    throw CancellationError()
  }

  func stop() {
    process.signalGroup(SIGKILL)
  }

  /// A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it; another
  /// CA that signed neither; and a directory with the CA under its hash name (`openssl rehash`).
  private static func makeCertificates(in prefix: TemporaryDirectory) throws {
    let openssl = try #require(TestEnvironment.executable("/usr/bin/openssl"), "openssl is not installed")
      .path
    func run(_ arguments: [String]) throws {
      let outcome = try TestEnvironment.runTool(openssl, arguments)
      try #require(outcome.status == 0, "openssl \(arguments.joined(separator: " ")): \(outcome)")
    }
    let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    func file(_ name: String) -> String { prefix.file(name).path }
    for ca in ["ca", "other-ca"] {
      try run(
        ["req", "-x509"] + key + [
          "-keyout", file("\(ca).key"), "-out", file("\(ca).pem"), "-days", "2", "-subj",
          "/CN=Haul test \(ca)",
          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }
    let leaves = [
      ("server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
      ("client", "/CN=haul-client", "extendedKeyUsage=clientAuth\n"),
    ]
    for (name, subject, extensions) in leaves {
      try extensions.write(to: prefix.file("\(name).ext"), atomically: true, encoding: .utf8)
      try run(
        ["req"] + key + ["-keyout", file("\(name).key"), "-out", file("\(name).csr"), "-subj", subject])
      try run([
        "x509", "-req", "-in", file("\(name).csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
        "-CAcreateserial", "-out", file("\(name).pem"), "-days", "2", "-extfile", file("\(name).ext"),
      ])
    }
    try FileManager.default.copyItem(at: prefix.file("ca.pem"), to: prefix.file("cas/ca.pem"))
    try run(["rehash", file("cas")])
  }
}
