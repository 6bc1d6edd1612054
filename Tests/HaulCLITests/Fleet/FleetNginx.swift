import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// nginx serving a temporary directory at `limit_rate` per connection, with an access log that
/// says when each request started and ended and which worker sent it (the `X-Haul-Worker`
/// header each test worker adds), so that overlapping writers would show.
final class FleetNginx: Sendable {
  let root: TemporaryDirectory
  let port: Int
  private let prefix: TemporaryDirectory
  private let process: ChildProcess

  /// A test that failed before `stop()` leaves no server (nor its workers) running.
  deinit { if process.isRunning { process.signalGroup(SIGKILL) } }

  /// One access-log line.
  struct Request: Sendable, CustomStringConvertible {
    let uri: String
    let worker: String
    let status: Int
    let range: String?
    let bytes: Int
    /// Seconds since the epoch (nginx's `$msec`), at the first byte read and at the end.
    let start: Double
    let end: Double
    var description: String { "\(worker) \(uri) \(status) \(range ?? "-") \(bytes) \(start)…\(end)" }
  }

  static var binary: URL? { TestEnvironment.executable("/usr/sbin/nginx") }

  static func start(bytesPerSecond: Int) async throws -> FleetNginx {
    let binary = try #require(binary, "nginx is not installed (Debian: apt-get install nginx-light)")
    let prefix = try TemporaryDirectory()
    let root = try TemporaryDirectory()
    try FileManager.default.createDirectory(at: prefix.file("tmp"), withIntermediateDirectories: true)
    for _ in 0..<3 {
      let port = try freeLoopbackPort()
      let config = """
        \(getuid() == 0 ? "user root;" : "")
        worker_processes 1;
        error_log \(prefix.url.path)/error.log warn;
        events { worker_connections 256; }
        http {
          default_type application/octet-stream;
          log_format fleet '$msec $request_time "$http_x_haul_worker" $status "$http_range" $body_bytes_sent $uri';
          access_log \(prefix.url.path)/access.log fleet;
          client_body_temp_path \(prefix.url.path)/tmp/body;
          proxy_temp_path \(prefix.url.path)/tmp/proxy;
          fastcgi_temp_path \(prefix.url.path)/tmp/fastcgi;
          uwsgi_temp_path \(prefix.url.path)/tmp/uwsgi;
          scgi_temp_path \(prefix.url.path)/tmp/scgi;
          server {
            listen 127.0.0.1:\(port) sndbuf=32k;
            root \(root.url.path);
            sendfile off;
            limit_rate \(bytesPerSecond);
          }
        }
        """
      try config.write(to: prefix.file("nginx.conf"), atomically: true, encoding: .utf8)
      let process = try ChildProcess.start(
        binary,
        [
          "-p", prefix.url.path, "-c", prefix.file("nginx.conf").path, "-g",
          "daemon off; pid \(prefix.url.path)/nginx.pid;",
        ], newSession: true)
      let deadline = ContinuousClock.now + .seconds(30)
      while process.isRunning, !TestEnvironment.isListening(port: port), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      if process.isRunning, TestEnvironment.isListening(port: port) {
        return FleetNginx(root: root, port: port, prefix: prefix, process: process)
      }
      process.signal(SIGKILL)
      _ = await process.wait()
    }
    throw FailedToStart()
  }

  struct FailedToStart: Error {}

  private init(root: TemporaryDirectory, port: Int, prefix: TemporaryDirectory, process: ChildProcess) {
    self.root = root
    self.port = port
    self.prefix = prefix
    self.process = process
  }

  func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

  func stop() async {
    process.signal(SIGQUIT)  // graceful: finishes writing the log
    _ = await process.wait()
    process.signalGroup(SIGKILL)  // a worker still closing connections
  }

  /// The GET requests logged so far (nginx writes a line when a request ends).
  func requests() -> [Request] {
    let text = (try? String(contentsOf: prefix.file("access.log"), encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      // msec request_time "worker" status "range" bytes uri
      let quoted = line.split(separator: "\"", omittingEmptySubsequences: false)
      guard quoted.count == 5 else { return nil }
      let head = quoted[0].split(separator: " ")
      let middle = quoted[2].split(separator: " ")
      let tail = quoted[4].split(separator: " ")
      guard head.count == 2, let end = Double(head[0]), let duration = Double(head[1]), middle.count == 1,
        let status = Int(middle[0]), tail.count == 2, let bytes = Int(tail[0])
      else { return nil }
      let range = quoted[3] == "-" ? nil : String(quoted[3])
      return Request(
        uri: String(tail[1]), worker: String(quoted[1]), status: status, range: range, bytes: bytes,
        start: end - duration, end: end)
    }
  }
}
