import Foundation
import HaulTestSupport
import Testing

@testable import HaulCLI

/// `--retries N`: N retries after a failed attempt, as curl's `--retry N` (N + 1 attempts in a
/// row without progress); `--retries 0`: one attempt and no retry, as curl without `--retry`.
@Suite("haul --retries")
struct RetriesZeroTests {
  @Test func zeroParsesToNoRetries() throws {
    guard case .download(let options) = try CommandLineOptions.parse(["--retries", "0", "u"]) else {
      Issue.record("not a download")
      return
    }
    #expect(options.retries == 0)
    #expect(options.downloadOptions.maxAttemptsWithoutProgress == 1)
    #expect(throws: UsageError.self) { try CommandLineOptions.parse(["--retries", "-1", "u"]) }
  }

  /// The library counts attempts: N retries are N + 1 of them, saturating; the default is 10
  /// retries.
  @Test(arguments: [
    (["--retries", "1"], 2), (["--retries", "10"], 11), ([], 11), (["--retries", "inf"], Int.max),
    (["--retries", String(Int.max)], Int.max), (["--retries", String(Int.max - 1)], Int.max),
  ])
  func retriesAreAttemptsAfterTheFirst(arguments: [String], attempts: Int) throws {
    guard case .download(let options) = try CommandLineOptions.parse(arguments + ["u"]) else {
      Issue.record("not a download")
      return
    }
    #expect(options.downloadOptions.maxAttemptsWithoutProgress == attempts)
  }

  /// `haul add` takes the same option table: its downloads get the same count.
  @Test func addMapsRetriesTheSameWay() throws {
    let scanned = try CommandLineOptions.scan(
      ["--retries", "1", "http://h/f"], specs: AddCommand.subcommand.specs)
    guard
      case .download(let options) = try CommandLineOptions.checked(scanned.options, urls: scanned.positionals)
    else {
      Issue.record("not a download")
      return
    }
    #expect(options.downloadOptions.maxAttemptsWithoutProgress == 2)
  }

  /// An input file's `max-tries=N` counts attempts, as aria2 does: not a retry more.
  @Test func maxTriesCountsAttempts() throws {
    let entries = try InputFile.parse("http://h/a\n  max-tries=3\n", name: "urls.txt")
    let options = try CommandLineOptions.parseDownload(["--retries", "5", "http://h/first"])
    #expect(BatchPlan.jobs(options, entries: entries).map(\.options.maxAttemptsWithoutProgress) == [3])
  }

  @Test func oneAttemptThenTheServersError() async throws {
    let server = try TestServer()
    server.setResource("/x.bin", TestResource(body: TestResource.random(size: 1000, seed: 8)))
    server.enqueue("/x.bin", .status(503, headers: [("Retry-After", "0")]))
    let directory = try TemporaryDirectory()
    let once = try await CommandEndToEndTests.run(
      ["--retries", "0", server.url("/x.bin")], in: directory.url)
    #expect(once.status == 8, "\(once.stderr)")
    #expect(!once.stderr.contains("retrying"), "\(once.stderr)")
    #expect(once.stderr.contains("1 attempt"), "\(once.stderr)")
    #expect(server.requests(for: "/x.bin").count == 1)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  /// `--retries 1` retries once: a 503 and then the file.
  @Test func oneRetryAfterAFailedAttempt() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1000, seed: 9)
    server.setResource("/x.bin", TestResource(body: body))
    server.enqueue("/x.bin", .status(503, headers: [("Retry-After", "0")]))
    let directory = try TemporaryDirectory()
    let twice = try await CommandEndToEndTests.run(
      ["--retries", "1", server.url("/x.bin")], in: directory.url)
    #expect(twice.status == 0, "\(twice.stderr)")
    #expect(twice.stderr.contains("(attempt 2 of 2)"), "\(twice.stderr)")
    #expect(server.requests(for: "/x.bin").count == 2)
    #expect(CommandEndToEndTests.holds(directory.file("x.bin"), body), "file bytes differ")
  }
}
