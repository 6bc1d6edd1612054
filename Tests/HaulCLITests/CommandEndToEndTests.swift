import Foundation
import HaulTestSupport
import Testing

/// The `haul` process against the in-process test server: what a user at a terminal or a
/// script sees — files, exit statuses, messages, JSON lines, Ctrl-C.
@Suite("haul end to end")
struct CommandEndToEndTests {
  /// A running `haul`; output is collected on background threads so a full pipe never blocks it.
  final class HaulProcess: @unchecked Sendable {
    let process: Subprocess
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let group = DispatchGroup()

    init(_ arguments: [String], in directory: URL) throws {
      let binary = try #require(
        BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
      let stdout = try Subprocess.makePipe()
      let stderr = try Subprocess.makePipe()
      defer {
        close(stdout.write)
        close(stderr.write)
      }
      do {
        process = try Subprocess.spawn(
          binary.path, arguments, currentDirectory: directory.path, stdout: stdout.write,
          stderr: stderr.write)
      } catch {
        close(stdout.read)
        close(stderr.read)
        throw error
      }
      collect(stdout.read) { self.out.append($0) }
      collect(stderr.read) { self.err.append($0) }
    }

    /// Reads with read(2) to the end, retrying EINTR, then closes the descriptor.
    private func collect(_ descriptor: Int32, into append: @escaping @Sendable (Data) -> Void) {
      group.enter()
      DispatchQueue.global().async { [lock, group] in
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
          let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
          if count < 0, errno == EINTR { continue }
          guard count > 0 else { break }
          let chunk = Data(buffer[0..<count])
          lock.withLock { append(chunk) }
        }
        close(descriptor)
        group.leave()
      }
    }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    func signal(_ signal: Int32) { process.signal(signal) }

    /// Waits for the exit and for all output, without holding a thread of the test pool
    /// (blocked pool threads starve the other tests' event consumers).
    @discardableResult
    func wait() async -> Int32 {
      let end = await process.termination()
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        group.notify(queue: .global()) { continuation.resume() }
      }
      return end.status
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
  /// The tests that call it stall their server until `haul --timeout 600` gives up, so that a test
  /// task starved of the cooperative threads for a minute (seen under AddressSanitizer on a loaded
  /// machine) still finds haul mid-download when it runs again.
  static func waitForState(_ file: URL, of haul: HaulProcess) async throws {
    let deadline = ContinuousClock.now + .seconds(600)
    while !FileManager.default.fileExists(atPath: file.path) {
      try #require(haul.process.isRunning, "haul ended before writing its state: \(haul.stderr)")
      try #require(ContinuousClock.now < deadline, "no state file after 600 s")
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

  /// libdispatch logs a misuse to the system log (`LIBDISPATCH_LOG=stderr` sends it to stderr
  /// instead). The interrupt handler cleared its sources' handlers before cancelling them, a
  /// deprecated use logged once by every `haul` that ended.
  @Test func libdispatchHasNothingToLog() async throws {
    let server = try TestServer()
    server.setResource(
      "/data.bin", TestResource(body: TestResource.random(size: 10_000, seed: 3), etag: "\"1\""))
    let directory = try TemporaryDirectory()
    let binary = try #require(BinaryTests.binary)
    var environment = ProcessInfo.processInfo.environment
    environment["LIBDISPATCH_LOG"] = "stderr"
    let outcome = try await ChildProcess.start(
      binary, ["-q", "-o", directory.file("data.bin").path, server.url("/data.bin")], environment: environment
    ).wait()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(!outcome.stderr.contains("libdispatch"), "\(outcome.stderr)")
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
      ["-x", "1", "--timeout", "600", "-o", "big", server.url("/big")], in: directory.url)
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

  /// SIGTERM (a service manager, `kill`) and SIGHUP (the terminal closed) stop like Ctrl-C.
  @Test(arguments: [SIGTERM, SIGHUP])
  func otherStopSignalsSaveProgressToo(signal: Int32) async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 4)
    server.setResource(
      "/f",
      TestResource(body: body, etag: "\"t\"", faults: TestFaults(stallAfterBytes: 500_000, stallTimes: 1)))
    let directory = try TemporaryDirectory()
    let haul = try HaulProcess(
      ["-x", "1", "--timeout", "600", "-o", "f", server.url("/f")], in: directory.url)
    try await Self.waitForState(directory.file("f.haul"), of: haul)
    try await Task.sleep(for: .milliseconds(200))
    haul.signal(signal)
    #expect(await haul.wait() == 130, "\(haul.stderr)")
    #expect(haul.stderr.contains("run the same command again to resume"), "\(haul.stderr)")
    #expect(FileManager.default.fileExists(atPath: directory.file("f.part").path))
    #expect(FileManager.default.fileExists(atPath: directory.file("f.haul").path))

    server.updateFaults("/f") { $0.stallAfterBytes = nil }
    let again = try await Self.run(["-q", "-o", "f", server.url("/f")], in: directory.url)
    #expect(again.status == 0, "\(again.stderr)")
    #expect(Self.holds(directory.file("f"), body), "file bytes differ")
    #expect(server.requests(for: "/f").last?.header("Range")?.hasPrefix("bytes=") == true)
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

    let refused = try await Self.run(["--retries", "0", "http://127.0.0.1:1/x"], in: directory.url)
    #expect(refused.status == 4)

    let contents = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
    #expect(contents.sorted() == ["f", "secret"])
  }

  /// A server that hangs before its headers: progress ticks come before the download has a
  /// name or a byte, and must not print `haul:  0 B, 0 B/s`.
  @Test func noNamelessProgressLine() async throws {
    let silent = try SilentListener()
    let directory = try TemporaryDirectory()
    for arguments in [["-o", "x"], []] {
      let result = try await Self.run(
        arguments + ["--timeout", "0.5", "--retries", "0", silent.url("/x")], in: directory.url)
      #expect(result.status == 4, "\(result.stderr)")
      #expect(result.stderr.hasPrefix("haul: timed out: no data for 0.5 s"), "\(result.stderr)")
      #expect(!result.stderr.contains("haul:  "), "\(result.stderr)")
    }
  }

  /// The first plain progress line (standard error is not a terminal) shows a measured speed,
  /// even when the library's first progress event has none yet (it comes up to 0.1 s after the
  /// start, when 0–50 % of this file has arrived: past 10 % the line is printed).
  @Test func theFirstPlainProgressLineHasASpeed() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 600_000, seed: 7)
    server.setResource(
      "/f", TestResource(body: body, etag: "\"p\"", faults: TestFaults(bytesPerSecond: 3_000_000)))
    let directory = try TemporaryDirectory()
    let result = try await Self.run(["-x", "1", server.url("/f")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("haul: f ") }
    let first = try #require(lines.first, "no progress line: \(result.stderr)")
    #expect(!first.contains(" 0 B/s") && first.contains("/s, ETA "), "\(result.stderr)")
  }

  @Test func retriesInfMeansNoLimit() async throws {
    let server = try TestServer()
    server.setResource("/x.bin", TestResource(body: TestResource.random(size: 1000, seed: 8)))
    let directory = try TemporaryDirectory()
    // Without a limit it keeps trying past the default budget, and says so without an "of".
    for _ in 0..<12 { server.enqueue("/x.bin", .status(503, headers: [("Retry-After", "0")])) }
    let again = try await Self.run(["-q", "--retries", "inf", server.url("/x.bin")], in: directory.url)
    #expect(again.status == 0, "\(again.stderr)")
    #expect(server.requests(for: "/x.bin").count == 13)
    server.enqueue("/x.bin", .status(503, headers: [("Retry-After", "0")]))
    let shown = try await Self.run(
      ["--overwrite", "--retries", "inf", server.url("/x.bin")], in: directory.url)
    #expect(shown.stderr.contains("retrying in 0.0 s (attempt 2)\n"), "\(shown.stderr)")
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

  /// A rerun that cannot ask the server (gone from it: 404; the server down) still finds the
  /// file complete: exit 0, saying why it was not checked, one request and no retries.
  @Test func rerunOfACompleteFileTheServerCannotConfirm() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 50_000, seed: 6), etag: "\"v\""))
    let directory = try TemporaryDirectory()
    #expect(try await Self.run(["-q", server.url("/f")], in: directory.url).status == 0)
    let url = server.url("/f")
    server.removeResource("/f")
    let gone = try await Self.run([url], in: directory.url)
    #expect(gone.status == 0, "\(gone)")
    #expect(
      gone.stderr.contains("is already complete (not checked against the server: the server answered 404"),
      "\(gone.stderr)")
    #expect(server.requests(for: "/f").count == 2)
    server.stop()
    let down = try await Self.run(["--json", url], in: directory.url)
    #expect(down.status == 0, "\(down)")
    #expect(down.stdout.contains("\"server_not_checked\":\"cannot connect"), "\(down.stdout)")
    #expect(!down.stdout.contains("retrying"), "\(down.stdout)")
  }
}
