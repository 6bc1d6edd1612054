import Foundation
import Haul
import HaulTestSupport
import Testing

/// Runs the built `haul` executable. End-to-end downloads live elsewhere; these check that the
/// binary exists and that its argument handling and exit statuses work outside the test process.
@Suite("haul binary")
struct BinaryTests {
  /// The `haul` executable: `$HAUL_BINARY`, else next to the test bundle (walking up a few levels,
  /// which covers Linux's `debug/X.xctest` and macOS's `X.xctest/Contents/MacOS/X`), else under the
  /// package's `.build`.
  static let binary: URL? = {
    let fileManager = FileManager.default
    if let path = ProcessInfo.processInfo.environment["HAUL_BINARY"],
      fileManager.isExecutableFile(atPath: path)
    {
      return URL(fileURLWithPath: path)
    }
    var starts: [URL] = []
    if let executable = Bundle.main.executableURL { starts.append(executable.resolvingSymlinksInPath()) }
    starts.append(URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath())
    starts.append(contentsOf: Bundle.allBundles.map { $0.bundleURL.resolvingSymlinksInPath() })
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    for start in starts {
      var directory = start.deletingLastPathComponent()
      for _ in 0..<5 {
        let candidate = directory.appendingPathComponent("haul")
        if fileManager.isExecutableFile(atPath: candidate.path) { return candidate }
        if directory.path == "/" { break }
        directory = directory.deletingLastPathComponent()
      }
    }
    let fallback = packageRoot.appendingPathComponent(".build/debug/haul")
    return fileManager.isExecutableFile(atPath: fallback.path) ? fallback : nil
  }()

  struct Outcome {
    let status: Int32
    let stdout: String
    let stderr: String
  }

  private func run(_ arguments: [String]) throws -> Outcome {
    let binary = try #require(Self.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    let output = try Subprocess.capture(binary.path, arguments)
    return Outcome(status: output.termination.status, stdout: output.stdoutText, stderr: output.stderrText)
  }

  @Test func version() throws {
    let outcome = try run(["--version"])
    #expect(outcome.status == 0)
    let lines = outcome.stdout.split(separator: "\n")
    #expect(lines.first == "haul \(HaulLibrary.version)")
    #expect(lines.contains { $0.hasPrefix("libcurl/") })
    #expect(lines.contains { $0.hasPrefix("OpenSSL ") })
    #expect(outcome.stderr.isEmpty)
  }

  @Test func help() throws {
    let outcome = try run(["--help"])
    #expect(outcome.status == 0)
    #expect(outcome.stdout.contains("Usage: haul [options] URL"))
    #expect(outcome.stdout.contains("Exit status:"))
    #expect(try run(["-h"]).stdout == outcome.stdout)
  }

  @Test func noURL() throws {
    let outcome = try run([])
    #expect(outcome.status == 2)
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.stderr == "haul: no URL given\nTry 'haul --help'.\n")
  }

  @Test func unknownOption() throws {
    let outcome = try run(["--bogus"])
    #expect(outcome.status == 2)
    #expect(outcome.stderr == "haul: unknown option '--bogus'\nTry 'haul --help'.\n")
    let typo = try run(["--jsno", "http://example.com/"])
    #expect(typo.status == 2)
    #expect(typo.stderr.hasPrefix("haul: unknown option '--jsno' (did you mean '--json'?)\n"))
  }

  @Test func invalidURLIsAUsageError() throws {
    let outcome = try run(["--json", "not a url"])
    #expect(outcome.status == 2)
    #expect(outcome.stdout.hasPrefix("{\"event\":\"failed\",\"category\":\"invalid_input\""))
    #expect(outcome.stderr.hasPrefix("haul: "))
  }
}
