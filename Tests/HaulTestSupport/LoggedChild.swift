import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A child process with its standard output and error in files, read while it runs: the crash
/// trials start an executable built with the tests, wait for a line it prints, and kill it.
public final class LoggedChild: Sendable {
  public let process: Subprocess
  private let output: TemporaryDirectory

  public init(_ executable: URL, _ arguments: [String]) throws {
    output = try TemporaryDirectory()
    let out = try OutputFile(output.file("out").path)
    let err = try OutputFile(output.file("err").path)
    process = try Subprocess.spawn(
      executable.path, arguments, stdout: out.descriptor, stderr: err.descriptor)
  }

  /// An executable product built beside the test bundle (`HaulManagerHarness`, `FleetBench`).
  public static func builtExecutable(named name: String) -> URL? {
    var starts = [URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()]
    if let executable = Bundle.main.executableURL { starts.append(executable.resolvingSymlinksInPath()) }
    for start in starts {
      var directory = start.deletingLastPathComponent()
      for _ in 0..<5 {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory = directory.deletingLastPathComponent()
      }
    }
    return nil
  }

  public var pid: Int32 { process.pid }
  public var stdout: String { (try? String(contentsOf: output.file("out"), encoding: .utf8)) ?? "" }
  public var stderr: String { (try? String(contentsOf: output.file("err"), encoding: .utf8)) ?? "" }

  /// SIGKILL, then waits for the end; true if the signal ended it (and not an exit before).
  public func kill() async -> Bool {
    process.signal(SIGKILL)
    return await process.termination() == Termination(status: SIGKILL, signaled: true)
  }

  /// The first line of stdout that starts with `prefix`, waiting for it (at most `seconds`, a
  /// bound on a hang only).
  public func line(_ prefix: String, seconds: Double = 60) async -> String? {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
      if let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
        return String(line)
      }
      if ContinuousClock.now >= deadline { return nil }
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  deinit { process.signal(SIGKILL) }
}
