import Foundation
import HaulTestSupport
import Testing

/// Many idle TCP connections to a loopback port, held by a python3 child process rather than by
/// the test process, which runs hundreds of other tests at once and must not spend its
/// descriptor limit on them.
final class IdleConnections {
  private let child: ChildProcess
  private let directory: TemporaryDirectory

  /// Opens `count` connections to `127.0.0.1:port` and returns once all are established.
  static func open(_ count: Int, to port: Int) async throws -> IdleConnections {
    let python = try #require(
      TestEnvironment.executable("/usr/bin/python3"), "python3 is needed to hold the idle connections")
    let directory = try TemporaryDirectory()
    let ready = directory.file("ready")
    let script = """
      import resource, socket, sys, time
      soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
      resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, int(sys.argv[2]) + 64), hard), hard))
      held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(int(sys.argv[2]))]
      open(sys.argv[3], "w").write(str(len(held)))
      while True:
          time.sleep(3600)
      """
    let child = try ChildProcess.start(python, ["-c", script, String(port), String(count), ready.path])
    let held = IdleConnections(child: child, directory: directory)
    let deadline = ContinuousClock.now + .seconds(120)
    while (try? String(contentsOf: ready, encoding: .utf8)) != String(count) {
      guard child.isRunning, ContinuousClock.now < deadline else {
        let outcome = await held.close()
        throw HeldConnectionsFailure(description: "python3 could not open \(count) connections: \(outcome)")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    return held
  }

  private init(child: ChildProcess, directory: TemporaryDirectory) {
    self.child = child
    self.directory = directory
  }

  /// Closes every connection (the holder is killed) and waits for it to end.
  @discardableResult
  func close() async -> ProcessOutcome {
    child.signal(SIGKILL)
    return await child.wait()
  }

  struct HeldConnectionsFailure: Error, CustomStringConvertible {
    let description: String
  }
}
