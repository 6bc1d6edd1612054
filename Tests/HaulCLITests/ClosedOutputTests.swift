import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `haul -o - URL | head -c 100`: the reader closes the pipe mid-download. haul must not die
/// of SIGPIPE (status 141, in no exit table): it stops with one short line (none with -q)
/// and exit status 3, as a write that failed (curl exits 23).
@Suite("haul -o - into a pipe its reader closes", .timeLimit(.minutes(1)))
struct ClosedOutputTests {
  /// Runs `haul` with standard output into a pipe whose reader takes 100 bytes and closes it.
  static func runIntoHead(_ arguments: [String], in directory: URL) async throws -> (
    end: Termination, stderr: String
  ) {
    let binary = try #require(BinaryTests.binary, "the haul executable was not found")
    let output = try Subprocess.makePipe()
    let errors = try Subprocess.makePipe()
    let child: Subprocess
    do {
      child = try Subprocess.spawn(
        binary.path, arguments, currentDirectory: directory.path, stdout: output.write, stderr: errors.write)
    } catch {
      for descriptor in [output.read, output.write, errors.read, errors.write] { close(descriptor) }
      throw error
    }
    close(output.write)
    close(errors.write)
    let stderr = Task.detached { () -> String in
      var collected: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(errors.read, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        collected += buffer[0..<count]
      }
      close(errors.read)
      return String(decoding: collected, as: UTF8.self)
    }
    // As `head -c 100`: read 100 bytes, then close the reading end.
    var taken = 0
    var buffer = [UInt8](repeating: 0, count: 100)
    while taken < 100 {
      let count = buffer.withUnsafeMutableBytes { read(output.read, $0.baseAddress, 100 - taken) }
      if count < 0, errno == EINTR { continue }
      guard count > 0 else { break }
      taken += count
    }
    close(output.read)
    let end = await child.termination()
    return (end, await stderr.value)
  }

  static func slowServer() throws -> TestServer {
    let server = try TestServer()
    // Slow enough that most of the body is still to come when the reader leaves.
    server.setResource(
      "/f.bin",
      TestResource(
        body: TestResource.random(size: 2_000_000, seed: 190), etag: "\"c\"",
        faults: TestFaults(bytesPerSecond: 1_000_000)))
    return server
  }

  @Test func stopsWithOneLineAndStatusThree() async throws {
    let server = try Self.slowServer()
    let directory = try TemporaryDirectory()
    let result = try await Self.runIntoHead(["-o", "-", server.url("/f.bin")], in: directory.url)
    #expect(result.end == Termination(status: 3, signaled: false), "\(result.end): \(result.stderr)")
    #expect(
      result.stderr.hasSuffix("haul: stopped: the reader of standard output closed it\n"), "\(result.stderr)")
    #expect(!result.stderr.contains("Broken pipe"), "\(result.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
  }

  @Test func quietSaysNothing() async throws {
    let server = try Self.slowServer()
    let directory = try TemporaryDirectory()
    let result = try await Self.runIntoHead(["-q", "-o", "-", server.url("/f.bin")], in: directory.url)
    #expect(result.end == Termination(status: 3, signaled: false), "\(result.end): \(result.stderr)")
    #expect(result.stderr.isEmpty, "\(result.stderr)")
  }

  /// A batch ignores SIGPIPE too: `haul --json URL URL | head -c 100` finishes its downloads.
  @Test func aBatchOutlivesItsClosedOutput() async throws {
    let server = try Self.slowServer()
    server.setResource(
      "/g.bin", TestResource(body: TestResource.random(size: 1000, seed: 191), etag: "\"g\""))
    let directory = try TemporaryDirectory()
    let result = try await Self.runIntoHead(
      ["--json", "-d", "out", server.url("/f.bin"), server.url("/g.bin")], in: directory.url)
    #expect(result.end == Termination(status: 0, signaled: false), "\(result.end): \(result.stderr)")
    let saved = try FileManager.default.contentsOfDirectory(atPath: directory.file("out").path)
    #expect(saved.sorted() == ["f.bin", "g.bin"])
  }
}
