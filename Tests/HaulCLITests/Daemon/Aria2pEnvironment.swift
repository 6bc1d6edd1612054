import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A Python virtual environment with aria2p (PyPI), for the tests that drive `haul daemon` with
/// a real aria2 client: `$HAUL_ARIA2P_VENV` (what `.ci/run` makes), else `.build/aria2p-venv`
/// in this package, made once by `python3 -m venv` and `pip install aria2p`. Nil when neither
/// works (no python3-venv, PyPI unreachable): the tests are then skipped, and say so.
actor Aria2pEnvironment {
  static let shared = Aria2pEnvironment()
  static let skipReason: Comment =
    "aria2p is not installed and PyPI is unreachable or python3-venv missing (set HAUL_ARIA2P_VENV); skipped"

  private var prepared: String??

  /// The venv's directory, prepared on first use.
  func venv() async -> String? {
    if let prepared { return prepared }
    let found = await prepare()
    prepared = .some(found)
    return found
  }

  private func prepare() async -> String? {
    let environment = ProcessInfo.processInfo.environment
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let directory =
      environment["HAUL_ARIA2P_VENV"] ?? packageRoot.appendingPathComponent(".build/aria2p-venv").path
    if await hasAria2p(directory) { return directory }
    guard environment["HAUL_ARIA2P_VENV"] == nil else { return nil }
    guard let python = TestEnvironment.executable("/usr/bin/python3") else { return nil }
    guard await run(python.path, ["-m", "venv", directory], seconds: 120) else { return nil }
    let pip = directory + "/bin/pip"
    // A short timeout and one retry: without PyPI this gives up in well under a minute.
    guard
      await run(
        pip, ["install", "--disable-pip-version-check", "-q", "--timeout", "15", "--retries", "1", "aria2p"],
        seconds: 300)
    else { return nil }
    return await hasAria2p(directory) ? directory : nil
  }

  private func hasAria2p(_ directory: String) async -> Bool {
    let python = directory + "/bin/python"
    guard FileManager.default.isExecutableFile(atPath: python) else { return false }
    return await run(python, ["-c", "import aria2p, websocket"], seconds: 60)
  }

  /// Runs a tool to its end, killed after `seconds` (a bound against a hang); true when it exited 0.
  private func run(_ path: String, _ arguments: [String], seconds: Double) async -> Bool {
    guard let child = try? ChildProcess.start(URL(fileURLWithPath: path), arguments) else { return false }
    let outcome = await boundedWait(child, seconds: seconds, recordingIssue: false)
    return outcome.status == 0 && !outcome.signaled
  }
}
