import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulCLI

/// `--refresh-url-command CMD`: a link that expires mid-download continues from the URL the
/// command prints (`sh -c`, the old URL in `HAUL_URL`).
@Suite("haul --refresh-url-command")
struct RefreshURLCommandTests {
  @Test func parsesIntoARefresher() throws {
    guard
      case .download(let options) = try CommandLineOptions.parse(["--refresh-url-command", "echo x", "u"])
    else {
      Issue.record("not a download")
      return
    }
    #expect(options.refreshURLCommand == "echo x")
    #expect(options.downloadOptions.refreshURL != nil)
    #expect(throws: UsageError.self) { try CommandLineOptions.parse(["--refresh-url-command=", "u"]) }
    #expect(HelpText.text.contains("--refresh-url-command CMD"))
    // The catalog cannot keep it: `haul add` refuses it rather than drop it.
    #expect(!AddCommand.subcommand.specs.contains { $0.long == "refresh-url-command" })
  }

  /// The first line, trimmed; a failed command or empty output is no URL, and says so.
  @Test func theFirstLineOfASuccessfulCommandIsTheURL() throws {
    func result(_ output: String, _ status: Int32 = 0, signaled: Bool = false) -> RefreshCommand.Result {
      RefreshCommand.Result(output: Array(output.utf8), status: status, signaled: signaled)
    }
    #expect(try RefreshCommand.freshURL(result("http://h/b\n")) == "http://h/b")
    #expect(try RefreshCommand.freshURL(result("  http://h/b \r\nsecond\n")) == "http://h/b")
    for (bad, text) in [
      (result("http://h/b\n", 1), "exited with status 1"), (result("", 0), "printed no URL"),
      (result("\nhttp://h/b\n"), "printed no URL"), (result("", 9, signaled: true), "killed by signal 9"),
    ] {
      #expect(throws: HaulError.self) { try RefreshCommand.freshURL(bad) }
      do {
        _ = try RefreshCommand.freshURL(bad)
      } catch {
        #expect(error.message.contains(text), "\(error.message)")
      }
    }
  }

  @Test func theCommandSeesTheOldURL() async throws {
    let refresher = RefreshCommand.refresher("printf '%s\\n' \"$HAUL_URL-fresh\"")
    #expect(try await refresher("http://h/a") == "http://h/a-fresh")
    let failing = RefreshCommand.refresher("exit 3")
    await #expect(throws: HaulError.self) { try await failing("http://h/a") }
  }

  static func expiring(_ body: [UInt8]) throws -> TestServer {
    let server = try TestServer()
    var faults = TestFaults(dropAfterBytes: 200_000, dropTimes: 1)
    faults.expireAfterResponses = 1
    server.setResource("/a", TestResource(body: body, etag: "\"v1\"", faults: faults))
    server.setResource("/b", TestResource(body: body, etag: "\"v1\""))
    return server
  }

  @Test func anExpiredLinkContinuesFromTheCommandsURL() async throws {
    let body = TestResource.random(size: 600_000, seed: 160)
    let server = try Self.expiring(body)
    let directory = try TemporaryDirectory()
    let run = try await CommandEndToEndTests.run(
      ["-o", "f", "--retries", "1", "--refresh-url-command", "echo \(server.url("/b"))", server.url("/a")],
      in: directory.url)
    #expect(run.status == 0, "\(run.stderr)")
    do {
      let same = CommandEndToEndTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/b").first?.header("Range") == "bytes=200000-")
  }

  @Test func aFailingCommandSaysSo() async throws {
    let body = TestResource.random(size: 600_000, seed: 161)
    let server = try Self.expiring(body)
    let directory = try TemporaryDirectory()
    let run = try await CommandEndToEndTests.run(
      ["-o", "f", "--retries", "1", "--refresh-url-command", "exit 7", server.url("/a")], in: directory.url)
    #expect(run.status != 0)
    #expect(run.stderr.contains("seems to have expired"), "\(run.stderr)")
    #expect(run.stderr.contains("--refresh-url-command exited with status 7"), "\(run.stderr)")
    #expect(server.requests(for: "/b").isEmpty)
  }

  @Test func withoutTheOptionTheMessageSaysHowToContinue() async throws {
    let body = TestResource.random(size: 600_000, seed: 162)
    let server = try Self.expiring(body)
    let directory = try TemporaryDirectory()
    let run = try await CommandEndToEndTests.run(
      ["-o", "f", "--retries", "1", server.url("/a")], in: directory.url)
    #expect(run.status == 8, "\(run.stderr)")
    #expect(run.stderr.contains("seems to have expired"), "\(run.stderr)")
    #expect(run.stderr.contains("fresh URL of the same file and the same -o"), "\(run.stderr)")
  }
}
