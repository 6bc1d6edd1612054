import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The built `haul daemon` as a child process on a catalog in `directory`, listening on a free
/// port, with an `RPCClient` to call it.
final class DaemonProcess: Sendable {
  static let secret = "s3cret-e2e"
  let child: ChildProcess
  let port: UInt16
  let client: RPCClient

  private init(child: ChildProcess, port: UInt16, client: RPCClient) {
    self.child = child
    self.port = port
    self.client = client
  }

  /// A test that failed before stopping it leaves no process behind.
  deinit { child.signal(SIGKILL) }

  /// Starts `haul daemon` with `--catalog DIR/catalog.sqlite -d DIR/downloads` and the secret
  /// (unless `arguments` name others); returns once it accepts connections.
  static func start(
    in directory: TemporaryDirectory, arguments: [String] = [], environment: [String: String]? = nil,
    secret: String? = DaemonProcess.secret, port: UInt16? = nil
  ) async throws -> DaemonProcess {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    let downloads = directory.file("downloads")
    try? FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
    // A free port can be taken by another test before the daemon binds it: then another one.
    for attempt in 1...5 {
      let chosen = try port ?? UInt16(freeLoopbackPort())
      var all = ["daemon", "--rpc-listen-port", String(chosen), "-d", downloads.path]
      if !arguments.contains("--catalog") && environment == nil {
        all += ["--catalog", directory.file("catalog.sqlite").path]
      }
      if let secret { all += ["--rpc-secret", secret] }
      let child = try ChildProcess.start(binary, all + arguments, environment: environment)
      let deadline = ContinuousClock.now + .seconds(60)
      while !TestEnvironment.listens(pid: child.pid, port: Int(chosen)) {
        guard child.isRunning, ContinuousClock.now < deadline else {
          child.signal(SIGKILL)
          let outcome = await boundedWait(child)
          if port == nil, attempt < 5, outcome.stderr.contains("Address already in use") { break }
          throw DaemonFailure(description: "haul daemon did not start listening:\n\(outcome)")
        }
        try await Task.sleep(for: .milliseconds(20))
      }
      guard child.isRunning else { continue }
      let client = try await RPCClient.connect(port: chosen, secret: secret ?? "")
      return DaemonProcess(child: child, port: chosen, client: client)
    }
    throw DaemonFailure(description: "haul daemon found no free port in 5 attempts")
  }

  struct DaemonFailure: Error, CustomStringConvertible {
    let description: String
  }

  func call(_ method: String, _ params: [JSONValue] = []) async throws -> JSONValue {
    try await client.call(method, params)
  }

  /// SIGTERM, then the end.
  func stop() async -> ProcessOutcome {
    child.signal(SIGTERM)
    let outcome = await boundedWait(child)
    await client.close()
    return outcome
  }

  func kill() async -> ProcessOutcome {
    child.signal(SIGKILL)
    let outcome = await boundedWait(child)
    await client.close()
    return outcome
  }

  /// Polls until every gid has `status` (at most `seconds`, against hangs).
  func waitFor(_ gids: [JSONValue], status: String, seconds: Double = 120) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
      var statuses: [JSONValue?] = []
      for gid in gids { statuses.append(try await call("aria2.tellStatus", [gid, ["status"]])["status"]) }
      if statuses.allSatisfy({ $0 == .string(status) }) { return }
      guard ContinuousClock.now < deadline else {
        throw DaemonFailure(description: "not all \(status): \(statuses)")
      }
      try await Task.sleep(for: .milliseconds(50))
    }
  }
}

/// One request with curl, as a user would type it; stdout is the body, with the status last.
func curl(_ arguments: [String]) async throws -> (status: Int, body: String) {
  let outcome = try await blockingRun("/usr/bin/curl", ["-s", "-o", "-", "-w", "\n%{http_code}"] + arguments)
  let lines = outcome.stdout.split(separator: "\n", omittingEmptySubsequences: false)
  return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
}

/// A tool run to its end (at most two minutes).
func blockingRun(_ path: String, _ arguments: [String]) async throws -> ProcessOutcome {
  await boundedWait(try ChildProcess.start(URL(fileURLWithPath: path), arguments))
}

/// `haul` run to its end (at most two minutes).
func runHaul(_ arguments: [String]) async throws -> ProcessOutcome {
  await boundedWait(try HaulBinary.start(arguments))
}

/// Waits for `child` to end, at most `seconds`: a bound against hangs. On this loaded machine
/// Foundation's `Process` has been seen to miss the exit of a child that ends at once (left a
/// zombie, its `wait()` never returns). Past the bound the child is killed and reaped here,
/// the test records an issue, and the outcome says so.
func boundedWait(_ child: ChildProcess, seconds: Double = 120, recordingIssue: Bool = true) async
  -> ProcessOutcome
{
  let pending = Locked<CheckedContinuation<ProcessOutcome, Never>?>(nil)
  let finish: @Sendable (ProcessOutcome) -> Void = { outcome in
    pending.withLock { continuation in
      continuation?.resume(returning: outcome)
      continuation = nil
    }
  }
  return await withCheckedContinuation { continuation in
    pending.withLock { $0 = continuation }
    // The timer holds the pid, not the child: a child held for the whole bound outlived short
    // runs, and the test process, and so did its output directory.
    let timer = Task { [pid = child.pid] in
      guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
      guard pending.withLock({ $0 != nil }) else { return }
      kill(pid, SIGKILL)
      var status: Int32 = 0
      for _ in 0..<100 where waitpid(pid, &status, WNOHANG) == 0 {
        try? await Task.sleep(for: .milliseconds(10))
      }
      if recordingIssue { Issue.record("process \(pid) did not end within \(Int(seconds)) s; killed") }
      finish(
        ProcessOutcome(status: -1, signaled: true, stdout: "", stderr: "did not end within \(Int(seconds)) s")
      )
    }
    Task {
      finish(await child.wait())
      timer.cancel()
    }
  }
}
