import Foundation
import HaulTestSupport
import Testing

/// What the command says when something went sideways: each message says what happened and
/// what to do next, in the command's words, once.
@Suite("haul messages")
struct CommandMessagesTests {
  /// A server that ignores ranges cannot resume: Ctrl-C says a rerun starts over, and does not
  /// promise a resume.
  @Test func ctrlCOnAServerThatCannotResumeSaysTheRerunStartsOver() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 171)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: "\"n\"",
        faults: TestFaults(ignoreRange: true, stallAfterBytes: 500_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let haul = try CommandEndToEndTests.HaulProcess(
      ["-x", "1", "--timeout", "600", "-o", "f", server.url("/f")], in: directory.url)
    try await CommandEndToEndTests.waitForState(directory.file("f.haul"), of: haul)
    try await Task.sleep(for: .milliseconds(200))
    haul.signal(SIGINT)
    #expect(await haul.wait() == 130, "\(haul.stderr)")
    #expect(
      haul.stderr.contains(
        "but the server cannot resume (it does not serve byte ranges), so running the same command again starts over"
      ),
      "\(haul.stderr)")
    #expect(!haul.stderr.contains("to resume"), "\(haul.stderr)")
    #expect(!haul.stderr.contains("run()"), "\(haul.stderr)")
  }

  /// A state file that is not one: one plain sentence, once, and the download starts over.
  @Test func aCorruptStateFileIsOnePlainSentence() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 172)
    server.setResource("/f", TestResource(body: body, etag: "\"c\""))
    let directory = try TemporaryDirectory()
    try Data(repeating: 7, count: 5000).write(to: directory.file("f.part"))
    try Data("this is not a state file\n".utf8).write(to: directory.file("f.haul"))
    let result = try await CommandEndToEndTests.run(["-o", "f", server.url("/f")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr.hasPrefix("haul: the saved state was unreadable; starting over\n"), "\(result.stderr)")
    #expect(result.stderr.components(separatedBy: "starting over").count == 2, "\(result.stderr)")
    #expect(!result.stderr.contains("corrupt"), "\(result.stderr)")
    #expect(CommandEndToEndTests.holds(directory.file("f"), body))
    expectOnlyResult(in: directory, name: "f")
  }

  /// "-o to choose another name" only when -o did not name the file already.
  @Test func noDashOHintWhenDashOWasGiven() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 1000, seed: 173)))
    let directory = try TemporaryDirectory()
    try Data("mine".utf8).write(to: directory.file("f"))
    let named = try await CommandEndToEndTests.run(["-o", "f", server.url("/f")], in: directory.url)
    #expect(named.status == 3, "\(named.stderr)")
    #expect(
      named.stderr.contains("--overwrite to replace it, or choose another file name"), "\(named.stderr)")
    #expect(!named.stderr.contains("-o "), "\(named.stderr)")
    let unnamed = try await CommandEndToEndTests.run([server.url("/f")], in: directory.url)
    #expect(unnamed.status == 3, "\(unnamed.stderr)")
    #expect(unnamed.stderr.contains("or -o to choose another name"), "\(unnamed.stderr)")
    #expect(CommandEndToEndTests.holds(directory.file("f"), Array("mine".utf8)))
  }

  /// Library wording never reaches the command's user.
  @Test func aChecksumMismatchSpeaksOfTheCommand() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 10_000, seed: 174)))
    let directory = try TemporaryDirectory()
    let wrong = "sha-256=" + String(repeating: "0", count: 64)
    let result = try await CommandEndToEndTests.run(
      ["--checksum", wrong, server.url("/f")], in: directory.url)
    #expect(result.status == 9)
    #expect(result.stderr.contains("run the same command again to fetch it anew"), "\(result.stderr)")
    #expect(!result.stderr.contains("run()"), "\(result.stderr)")
  }
}
