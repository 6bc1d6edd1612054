import Foundation
import HaulTestSupport
import Testing

/// What the README shows must be what the code does: its library example compiles against the
/// built `Haul` module, and its sample output and JSON are what the `haul` binary prints.
@Suite("README")
struct ReadmeTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  static func readme() throws -> String {
    try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
  }

  /// The first fenced block of `language` after the heading that starts with `heading`.
  static func block(_ language: String, after heading: String, in text: String) throws -> String {
    let text = "\n" + text
    let section = try #require(text.range(of: "\n" + heading), "no heading '\(heading)' in the README")
    let rest = text[section.upperBound...]
    let open = try #require(
      rest.range(of: "```" + language + "\n"), "no ```\(language) block after '\(heading)'")
    let close = try #require(
      rest[open.upperBound...].range(of: "\n```"), "the ```\(language) block does not end")
    return String(rest[open.upperBound..<close.lowerBound]) + "\n"
  }

  @Test func theLibraryExampleCompiles() throws {
    let code = try Self.block("swift", after: "## The library in", in: Self.readme())
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    // The build directory holds the modules (`Modules/` since SwiftPM 6) and the C targets' module maps.
    let build = binary.deletingLastPathComponent()
    let fileManager = FileManager.default
    let modules = build.appendingPathComponent("Modules")
    let moduleMaps = try fileManager.contentsOfDirectory(atPath: build.path).filter { $0.hasSuffix(".build") }
      .map { build.appendingPathComponent($0).appendingPathComponent("module.modulemap").path }
      .filter { fileManager.fileExists(atPath: $0) }
    let directory = try TemporaryDirectory()
    let source = directory.file("main.swift")
    try code.write(to: source, atomically: true, encoding: .utf8)
    let arguments =
      ["swiftc", "-typecheck", "-swift-version", "6", source.path, "-I", modules.path, "-I", build.path]
      + moduleMaps.flatMap { ["-Xcc", "-fmodule-map-file=" + $0] }
    let outcome = try TestEnvironment.runTool("/usr/bin/env", arguments)
    #expect(outcome.status == 0, "the README's library example does not compile:\n\(outcome.stderr)\n\(code)")
  }

  /// The keys of a flat JSON object, in order.
  static func keys(_ line: Substring) -> [String] {
    line.matches(of: /[{,]"([a-z_]+)":/).map { String($0.output.1) }
  }

  @Test func theJSONSampleHasTheFieldsTheBinaryPrints() async throws {
    let sample = try Self.block("json", after: "## Examples", in: Self.readme()).split(separator: "\n")
    #expect(sample.count >= 3)
    let server = try TestServer()
    server.setResource(
      "/big.iso",
      TestResource(
        body: TestResource.random(size: 600_000, seed: 160), etag: "\"j\"",
        faults: TestFaults(bytesPerSecond: 2_000_000)))
    let directory = try TemporaryDirectory()
    let result = try await CommandEndToEndTests.run(["--json", server.url("/big.iso")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    let printed = result.stdout.split(separator: "\n")
    for line in sample {
      let event = try #require(line.firstMatch(of: /"event":"([a-z]+)"/)?.output.1, "no event in \(line)")
      let real = try #require(
        printed.first { $0.contains("\"event\":\"\(event)\"") }, "haul printed no \(event)")
      #expect(Self.keys(line) == Self.keys(real), "README: \(line)\nhaul:   \(real)")
    }
  }

  /// A message line with its numbers, sizes, rates and durations made generic.
  static func shape(_ line: Substring) -> String {
    String(line).replacing(/\d+(\.\d+)? (B|KiB|MiB|GiB|TiB)\/s/, with: "RATE")
      .replacing(/\d+(\.\d+)? (B|KiB|MiB|GiB|TiB)/, with: "SIZE")
      .replacing(/\d+(\.\d+)? s/, with: "SECONDS")
  }

  @Test func theConsoleSampleIsWhatTheBinaryPrints() async throws {
    let sample = try Self.block("console", after: "# Haul", in: Self.readme()).split(separator: "\n")
      .filter { $0.hasPrefix("haul: ") || $0.hasPrefix("✓ ") }.map(Self.shape)
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 161)
    server.setResource(
      "/ubuntu.iso",
      TestResource(body: body, etag: "\"c\"", faults: TestFaults(stallAfterBytes: 1_000_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let first = try CommandEndToEndTests.HaulProcess(
      ["-x", "1", "--timeout", "600", server.url("/ubuntu.iso")], in: directory.url)
    try await CommandEndToEndTests.waitForState(directory.file("ubuntu.iso.haul"), of: first)
    try await Task.sleep(for: .milliseconds(300))
    first.signal(SIGINT)
    #expect(await first.wait() == 130)
    server.updateFaults("/ubuntu.iso") { $0.stallAfterBytes = nil }
    let second = try await CommandEndToEndTests.run([server.url("/ubuntu.iso")], in: directory.url)
    #expect(second.status == 0, "\(second.stderr)")
    // Messages only: the progress lines of a log (stderr is not a terminal here) are left out.
    let printed = (first.stderr + second.stderr).split(separator: "\n")
      .filter { !$0.hasPrefix("haul: ubuntu.iso ") }.map(Self.shape)
    #expect(
      printed == sample,
      "README:\n\(sample.joined(separator: "\n"))\nhaul:\n\(printed.joined(separator: "\n"))")
  }

  @Test func ciCountsSkippedTests() throws {
    let log = try TemporaryDirectory()
    let lines = [
      "◇ Test run started.",
      "➜ Suite InteropTests skipped: \"lighttpd is not installed (Debian: lighttpd); skipped\"",
      "➜ Test resumesAgainstLighttpd() skipped: \"lighttpd is not installed (Debian: lighttpd); skipped\"",
      "➜ Test changedFileIsRefetched() skipped: \"lighttpd is not installed (Debian: lighttpd); skipped\"",
      "➜ Test diskFull() skipped: \"mounting a tmpfs is not permitted here (needs root); skipped\"",
      "✔ Test autoRenameNumbersTheLaterOnesAndSkipsNamesOthersAskedFor() passed after 0.1 seconds.",
      "✔ Test run with 400 tests in 50 suites passed after 30 seconds.",
    ]
    try lines.joined(separator: "\n").write(to: log.file("test.log"), atomically: true, encoding: .utf8)
    let outcome = try TestEnvironment.runTool(
      Self.root.appendingPathComponent(".ci/skip-summary").path, [log.file("test.log").path])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      outcome.stdout == """
        tests skipped: 3
              2 "lighttpd is not installed (Debian: lighttpd); skipped"
              1 "mounting a tmpfs is not permitted here (needs root); skipped"

        """, "\(outcome)")
  }
}
