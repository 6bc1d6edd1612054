import Foundation
import HaulTestSupport
import Testing

@testable import HaulCLI

/// `--retries 0`: one attempt and no retry, as wget's `--tries=1` and curl without `--retry`.
@Suite("haul --retries 0")
struct RetriesZeroTests {
  @Test func zeroParsesToNoRetries() throws {
    guard case .download(let options) = try CommandLineOptions.parse(["--retries", "0", "u"]) else {
      Issue.record("not a download")
      return
    }
    #expect(options.retries == 0)
    #expect(options.downloadOptions.maxAttemptsWithoutProgress == 0)
    #expect(throws: UsageError.self) { try CommandLineOptions.parse(["--retries", "-1", "u"]) }
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
}
