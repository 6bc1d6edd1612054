import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A directory with a catalog in it, and `haul` subcommands run on that catalog (with the
/// directory as the current one, so `-d out` lands inside).
final class CatalogFixture: Sendable {
  let directory: TemporaryDirectory
  let catalog: URL

  init() throws {
    directory = try TemporaryDirectory()
    catalog = directory.file("catalog.sqlite")
  }

  /// `haul SUBCOMMAND --catalog CATALOG ARGUMENTS…`, started.
  func start(_ subcommand: String, _ arguments: [String] = [], environment: [String: String]? = nil) throws
    -> ChildProcess
  {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    return try ChildProcess.start(
      binary, [subcommand, "--catalog", catalog.path] + arguments, environment: environment,
      currentDirectory: directory.url)
  }

  /// `haul SUBCOMMAND --catalog CATALOG ARGUMENTS…` to its end.
  func run(_ subcommand: String, _ arguments: [String] = [], environment: [String: String]? = nil)
    async throws
    -> ProcessOutcome
  {
    try await start(subcommand, arguments, environment: environment).wait()
  }

  /// `haul add`, expecting success; the ids it printed.
  func add(_ arguments: [String]) async throws -> [String] {
    let outcome = try await run("add", arguments)
    #expect(outcome.status == 0, "\(outcome)")
    return outcome.stdout.split(separator: "\n").map(String.init)
  }

  /// `haul ls --json`: one dictionary per download, values as text.
  func list() async throws -> [[String: String]] {
    let outcome = try await run("ls", ["--json"])
    #expect(outcome.status == 0, "\(outcome)")
    return outcome.events
  }

  /// The download `id` as `haul ls --json` shows it.
  func download(_ id: String) async throws -> [String: String]? {
    try await list().first { $0["id"] == id }
  }

  /// A file's bytes, relative to the directory.
  func contents(_ name: String) -> [UInt8]? { directory.contents(name) }

  /// Polls until `condition` holds (a generous deadline only bounds a hang; nothing is timed).
  static func waitUntil(_ what: String, seconds: Double = 120, _ condition: () async throws -> Bool)
    async throws
  {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
      guard ContinuousClock.now < deadline else {
        Issue.record("gave up waiting: \(what)")
        throw CancellationError()
      }
      try await Task.sleep(for: .milliseconds(50))
    }
  }

  /// The bytes of the file at `path` (nil when missing).
  static func bytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
  }
}

/// A served file of random bytes and its URL.
struct ServedFile {
  let name: String
  let body: [UInt8]
  let url: String

  /// Serves `count` files of `size` bytes at `/NAME`, each throttled to `bytesPerSecond` and, with
  /// `stallAfter`, silent after that many bytes of every response.
  static func serve(
    _ count: Int, size: Int, on server: TestServer, bytesPerSecond: Int? = nil, stallAfter: Int? = nil,
    seed: UInt64 = 1, prefix: String = "f"
  ) -> [ServedFile] {
    (0..<count).map { index in
      let name = "\(prefix)\(index).bin"
      let body = TestResource.random(size: size + index * 1024, seed: seed + UInt64(index))
      server.setResource(
        "/" + name,
        TestResource(
          body: body, etag: "\"\(name)-v1\"",
          faults: TestFaults(stallAfterBytes: stallAfter, bytesPerSecond: bytesPerSecond)))
      return ServedFile(name: name, body: body, url: server.url("/" + name))
    }
  }
}
