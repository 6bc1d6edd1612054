import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `-o -`, `/dev/null`, FIFOs: written to as the bytes come, without `.part`, state or resume,
/// and never replaced.
@Suite("haul writes where it is told")
struct StreamTargetTests {
  static func fileType(_ path: String) -> mode_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
  }

  /// Runs `haul` with its standard output into a pipe, kept as bytes.
  static func runPiped(_ arguments: [String], in directory: URL) async throws -> (
    status: Int32, stdout: [UInt8], stderr: String
  ) {
    let binary = try #require(BinaryTests.binary, "the haul executable was not found")
    let output = try await Subprocess.capture(binary.path, arguments, currentDirectory: directory.path)
    return (output.termination.status, output.stdout, output.stderrText)
  }

  @Test func dashOWritesToStandardOutput() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 181)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"o\""))
    let directory = try TemporaryDirectory()
    let result = try await Self.runPiped(["-o", "-", server.url("/f.bin")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    let same = result.stdout == body
    #expect(same, "standard output is not the file (\(result.stdout.count) bytes)")
    #expect(result.stderr.contains("✓ sent to standard output ("), "\(result.stderr)")
    #expect(result.stderr.contains("downloading to standard output ("), "\(result.stderr)")
    #expect(!result.stderr.contains("/dev/stdout"), "\(result.stderr)")
    // One connection, in order; nothing on disk.
    #expect(server.requests(for: "/f.bin").count == 1)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  /// Giving up on a stream promises no resume: nothing of it is kept for a later run.
  @Test func givingUpOnAStreamPromisesNoResume() async throws {
    let server = try TestServer()
    var resource = TestResource(body: TestResource.random(size: 3_000_000, seed: 183), etag: "\"g\"")
    resource.faults.dropAfterBytes = 100_000
    server.setResource("/f.bin", resource)
    let directory = try TemporaryDirectory()
    let result = try await Self.runPiped(
      ["-o", "-", "--retries", "0", server.url("/f.bin")], in: directory.url)
    #expect(result.status == 4, "\(result.stderr)")
    #expect(result.stdout.count == 100_000)
    #expect(
      result.stderr.contains(
        "a stream is written as it comes and keeps nothing to resume from, so it starts over"),
      "\(result.stderr)")
    #expect(
      result.stderr.range(of: "resume from [0-9]", options: .regularExpression) == nil, "\(result.stderr)")
  }

  /// A server without validators proves a resume by the bytes before its range, which a stream
  /// keeps (the last 64 KiB it wrote): the stream goes on where the connection broke.
  @Test func aStreamResumesFromAServerWithoutValidators() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 187)
    var resource = TestResource(body: body)
    resource.faults.dropAfterBytes = 1_000_000
    resource.faults.dropTimes = 1
    server.setResource("/f.bin", resource)
    let directory = try TemporaryDirectory()
    let result = try await Self.runPiped(["-o", "-", server.url("/f.bin")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    let same = result.stdout == body
    #expect(same, "standard output is not the file (\(result.stdout.count) bytes)")
    #expect(server.requests(for: "/f.bin").count == 2)
  }

  /// A server that answers the resume with the whole file: a stream cannot start over, so it
  /// stops, saying why, with what it wrote intact.
  @Test func aStreamThatWouldStartOverStopsInstead() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 189)
    var resource = TestResource(body: body)
    resource.faults.dropAfterBytes = 1_000_000
    resource.faults.dropTimes = 1
    resource.faults.ignoreRange = true
    server.setResource("/f.bin", resource)
    let directory = try TemporaryDirectory()
    let result = try await Self.runPiped(["-o", "-", server.url("/f.bin")], in: directory.url)
    #expect(result.status == 4, "\(result.stderr)")
    #expect(result.stdout == Array(body.prefix(1_000_000)))
    #expect(result.stderr.contains("already written to the output cannot be taken back"), "\(result.stderr)")
    #expect(!result.stderr.contains("Illegal seek"), "\(result.stderr)")
    #expect(result.stderr.contains("download it to a file instead (-o FILE)"), "\(result.stderr)")
  }

  @Test func dashOIsOneDownloadWithoutJSON() async throws {
    let directory = try TemporaryDirectory()
    let several = try await CommandEndToEndTests.run(
      ["-o", "-", "http://127.0.0.1:1/a", "http://127.0.0.1:1/b"], in: directory.url)
    #expect(several.status == 2)
    #expect(
      several.stderr.hasPrefix(
        "haul: -o - writes one download to standard output; with several URLs use --dir\n"))
    let json = try await CommandEndToEndTests.run(
      ["--json", "-o", "-", "http://127.0.0.1:1/a"], in: directory.url)
    #expect(json.status == 2)
    #expect(json.stderr.contains("-o - writes the file to standard output"), "\(json.stderr)")
    #expect(json.stdout.isEmpty)
  }

  @Test func devNullIsWrittenToAndStaysADevice() async throws {
    let server = try TestServer()
    server.setResource(
      "/f.bin", TestResource(body: TestResource.random(size: 2_000_000, seed: 182), etag: "\"n\""))
    let directory = try TemporaryDirectory()
    let result = try await CommandEndToEndTests.run(
      ["-o", "/dev/null", server.url("/f.bin")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(Self.fileType("/dev/null") == S_IFCHR)
    #expect(Self.fileType("/dev/null.part") == nil && Self.fileType("/dev/null.haul") == nil)
    #expect(server.bodyBytesSent(for: "/f.bin") == 2_000_000)
  }

  /// A FIFO, even with --overwrite: streamed to its reader, checked, and still a FIFO.
  @Test func aFIFOIsStreamedAndNeverReplaced() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_500_000, seed: 183)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"p\""))
    let directory = try TemporaryDirectory()
    let fifo = directory.file("pipe").path
    #expect(mkfifo(fifo, 0o600) == 0)
    let received = TestLock<[UInt8]>([])
    let reader = Thread {
      guard let handle = FileHandle(forReadingAtPath: fifo) else { return }
      let data = handle.readDataToEndOfFile()
      received.withLock { $0 = Array(data) }
    }
    reader.start()
    let hash = try VerifiedRerunTests.sha256(body)
    let result = try await CommandEndToEndTests.run(
      ["--overwrite", "--checksum", "sha-256=" + hash, "-o", "pipe", server.url("/f.bin")], in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    while received.withLock({ $0.isEmpty }) && reader.isExecuting {
      try await Task.sleep(for: .milliseconds(10))
    }
    let same = received.withLock { $0 } == body
    #expect(same, "the FIFO's reader did not get the file")
    #expect(Self.fileType(fifo) == S_IFIFO, "the FIFO was replaced")
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["pipe"])
  }

  /// A FIFO another user put at the name (a shared directory) is not written to.
  @Test func anotherUsersFIFOIsRefused() async throws {
    guard geteuid() == 0 else { return }  // Only root can give a FIFO to another user.
    let directory = try TemporaryDirectory()
    let fifo = directory.file("pipe").path
    #expect(mkfifo(fifo, 0o666) == 0)
    #expect(chown(fifo, 65534, 65534) == 0)
    let result = try await CommandEndToEndTests.run(
      ["-o", "pipe", "http://127.0.0.1:1/f"], in: directory.url)
    #expect(result.status == 3, "\(result.stderr)")
    #expect(result.stderr.contains("is a FIFO of another user"), "\(result.stderr)")
    #expect(Self.fileType(fifo) == S_IFIFO)
  }
}
