import Foundation
import HaulTestSupport
import Testing

/// The `haul` process against the in-process test server: what a user at a terminal or a
/// script sees — files, exit statuses, messages, JSON lines, Ctrl-C.
@Suite("haul end to end")
struct CommandEndToEndTests {
  /// A running `haul`; output is collected on background threads so a full pipe never blocks it.
  final class HaulProcess: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let group = DispatchGroup()

    private let exited = DispatchSemaphore(value: 0)

    init(_ arguments: [String], in directory: URL) throws {
      let binary = try #require(
        BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
      process.executableURL = binary
      process.arguments = arguments
      process.currentDirectoryURL = directory
      process.standardInput = FileHandle.nullDevice
      let stdout = Pipe()
      let stderr = Pipe()
      process.standardOutput = stdout
      process.standardError = stderr
      process.terminationHandler = { [exited] _ in exited.signal() }
      try process.run()
      collect(stdout.fileHandleForReading) { self.out.append($0) }
      collect(stderr.fileHandleForReading) { self.err.append($0) }
    }

    private func collect(_ handle: FileHandle, into append: @escaping @Sendable (Data) -> Void) {
      group.enter()
      DispatchQueue.global().async { [lock, group] in
        while case let chunk = handle.availableData, !chunk.isEmpty {
          lock.lock()
          append(chunk)
          lock.unlock()
        }
        group.leave()
      }
    }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for the exit and for all output, without holding a thread of the test pool
    /// (blocked pool threads starve the other tests' event consumers).
    @discardableResult
    func wait() async -> Int32 {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async { [exited, group, process] in
          exited.wait()
          // The termination handler may run a moment before `isRunning` turns false.
          while process.isRunning { usleep(1000) }
          group.wait()
          continuation.resume()
        }
      }
      return process.terminationStatus
    }
  }

  static func run(_ arguments: [String], in directory: URL) async throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    let haul = try HaulProcess(arguments, in: directory)
    let status = await haul.wait()
    return (status, haul.stdout, haul.stderr)
  }

  /// Whether the file holds exactly these bytes (a Bool, so a failure does not print megabytes).
  static func holds(_ url: URL, _ expected: [UInt8]) -> Bool { bytes(url) == expected }

  /// Waits for the state file to appear while `haul` runs; fails (never hangs) otherwise.
  static func waitForState(_ file: URL, of haul: HaulProcess) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while !FileManager.default.fileExists(atPath: file.path) {
      try #require(haul.process.isRunning, "haul ended before writing its state: \(haul.stderr)")
      try #require(ContinuousClock.now < deadline, "no state file after 60 s")
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  static func bytes(_ url: URL) -> [UInt8]? { (try? Data(contentsOf: url)).map { Array($0) } }

  @Test func downloadsIntoTheCurrentDirectoryQuietly() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 1)
    server.setResource("/files/data.bin", TestResource(body: body, etag: "\"1\""))
    let directory = try TemporaryDirectory()
    let result = try await Self.run(["-q", server.url("/files/data.bin")], in: directory.url)
    #expect(result.status == 0)
    #expect(result.stderr.isEmpty)
    #expect(result.stdout.isEmpty)
    do {
      let same = Self.holds(directory.file("data.bin"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func jsonLinesDescribeTheDownload() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 2)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let result = try await Self.run(["--json", "-o", "out.bin", server.url("/f")], in: directory.url)
    #expect(result.status == 0)
    let events = try result.stdout.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    #expect(events.first?["event"] as? String == "started")
    #expect(events.last?["event"] as? String == "completed")
    #expect(events.last?["bytes"] as? Int == 200_000)
    #expect((events.last?["file"] as? String)?.hasSuffix("/out.bin") == true)
    do {
      let same = Self.holds(directory.file("out.bin"), body)
      #expect(same, "file bytes differ")
    }
  }

  @Test func ctrlCSavesProgressAndTheSameCommandResumes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 3)
    // The server goes silent after 1 MB (once): the signal always lands mid-download, however
    // late this test gets to run on a busy machine.
    server.setResource(
      "/big",
      TestResource(body: body, etag: "\"e\"", faults: TestFaults(stallAfterBytes: 1_000_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let haul = try HaulProcess(
      ["-x", "1", "--timeout", "60", "-o", "big", server.url("/big")], in: directory.url)
    try await Self.waitForState(directory.file("big.haul"), of: haul)
    try await Task.sleep(for: .milliseconds(400))
    haul.signal(SIGINT)
    #expect(await haul.wait() == 130)
    #expect(haul.stderr.contains("run the same command again to resume"))
    #expect(!FileManager.default.fileExists(atPath: directory.file("big").path))
    let saved = try #require(try? Data(contentsOf: URL(fileURLWithPath: directory.file("big.part").path)))
    #expect(saved.count > 0 && saved.count < body.count)

    server.updateFaults("/big") { $0.stallAfterBytes = nil }
    let again = try await Self.run(["-o", "big", server.url("/big")], in: directory.url)
    #expect(again.status == 0)
    do {
      let same = Self.holds(directory.file("big"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/big").last?.header("Range")?.hasPrefix("bytes=") == true)
    #expect(!FileManager.default.fileExists(atPath: directory.file("big.haul").path))
  }

  @Test func sigtermStopsCleanlyToo() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 4)
    server.setResource(
      "/f", TestResource(body: body, faults: TestFaults(stallAfterBytes: 500_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let haul = try HaulProcess(
      ["-q", "-x", "1", "--timeout", "60", "-o", "f", server.url("/f")], in: directory.url)
    try await Self.waitForState(directory.file("f.haul"), of: haul)
    try await Task.sleep(for: .milliseconds(200))
    haul.signal(SIGTERM)
    #expect(await haul.wait() == 130)
    #expect(FileManager.default.fileExists(atPath: directory.file("f.part").path))
  }

  @Test func exitStatusesForServerFileAndUsageErrors() async throws {
    let server = try TestServer()
    server.setResource(
      "/secret", TestResource(body: [1], faults: TestFaults(requireAuthorization: "Bearer x")))
    server.setResource("/f", TestResource(body: [1, 2, 3]))
    let directory = try TemporaryDirectory()

    let missing = try await Self.run([server.url("/nope")], in: directory.url)
    #expect(missing.status == 8)
    #expect(missing.stderr.contains("404"))

    let denied = try await Self.run([server.url("/secret")], in: directory.url)
    #expect(denied.status == 6)
    let allowed = try await Self.run(
      ["-q", "-H", "Authorization: Bearer x", server.url("/secret")], in: directory.url)
    #expect(allowed.status == 0)

    try Data("mine".utf8).write(to: directory.file("f"))
    let exists = try await Self.run([server.url("/f")], in: directory.url)
    #expect(exists.status == 3)
    #expect(exists.stderr.contains("--overwrite"))
    do {
      let same = Self.holds(directory.file("f"), Array("mine".utf8))
      #expect(same, "file bytes differ")
    }

    let usage = try await Self.run(["--limit-rate", "fast", server.url("/f")], in: directory.url)
    #expect(usage.status == 2)

    let refused = try await Self.run(["--retries", "1", "http://127.0.0.1:1/x"], in: directory.url)
    #expect(refused.status == 4)

    let contents = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
    #expect(contents.sorted() == ["f", "secret"])
  }

  @Test func checksumMismatchExitsNineAndLeavesNothing() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 10_000, seed: 6)))
    let directory = try TemporaryDirectory()
    let wrong = "sha-256=" + String(repeating: "0", count: 64)
    let result = try await Self.run(["--checksum", wrong, server.url("/f")], in: directory.url)
    #expect(result.status == 9)
    #expect(result.stderr.contains("sha-256 mismatch"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  @Test func rerunReportsCompleteWithoutFetching() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 50_000, seed: 5), etag: "\"v\""))
    let directory = try TemporaryDirectory()
    #expect(try await Self.run(["-q", server.url("/f")], in: directory.url).status == 0)
    let again = try await Self.run([server.url("/f")], in: directory.url)
    #expect(again.status == 0)
    #expect(again.stderr.contains("already complete"))
    #expect(server.requests(for: "/f").last?.status == 416)
  }
}
