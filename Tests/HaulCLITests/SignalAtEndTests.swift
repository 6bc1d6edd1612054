import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Stop signals that reach `haul` after its download has ended, while it still writes its last
/// line and exits: the download's own outcome stands.
@Suite("stop signals after the end of a download")
struct SignalAtEndTests {
  /// The file is complete and renamed, the reporter is still blocked writing (its stderr is a
  /// full pipe), and SIGTERM comes three times, then keeps coming until `haul` exits. It must
  /// exit 0 with the summary printed: not 130 from the "second signal exits at once" path,
  /// and not killed by a signal that arrives once the handlers are gone.
  @Test(.timeLimit(.minutes(6)))
  func signalsAfterTheEndKeepTheSuccessAndItsLine() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 11)
    server.setResource("/f", TestResource(body: body, etag: "\"e\""))
    let directory = try TemporaryDirectory()
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")

    let stderr = try Subprocess.makePipe()
    defer { close(stderr.read) }
    try Self.fill(stderr.write)
    let haul: Subprocess
    do {
      haul = try Subprocess.spawn(
        binary.path, ["-x", "4", "-o", "f", server.url("/f")], currentDirectory: directory.url.path,
        stderr: stderr.write)
    } catch {
      close(stderr.write)
      throw error
    }
    close(stderr.write)  // The child holds its own; the end of file then means it exited.

    // The download ends while the reporter waits on its first line.
    let finished = directory.file("f").path
    let state = directory.file("f.haul").path
    let deadline = ContinuousClock.now + .seconds(300)  // A loaded machine starves the test pool.
    while !FileManager.default.fileExists(atPath: finished) || FileManager.default.fileExists(atPath: state) {
      try #require(ContinuousClock.now < deadline, "the download did not finish")
      try await Task.sleep(for: .milliseconds(10))
    }
    // Time for the command to see its download return (then only the report is left).
    try await Task.sleep(for: .milliseconds(300))
    for _ in 0..<3 {
      haul.signal(SIGTERM)
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(haul.isRunning, "haul exited on a signal that came after its download ended")

    // Unblocked, it prints and exits, under a stream of signals (its last moments included).
    let storm = Thread {
      while haul.isRunning {
        haul.signal(SIGTERM)
        usleep(200)
      }
    }
    storm.start()
    // What haul wrote, after the filler.
    let text = String(await Self.readToEnd(stderr.read).drop { $0 == "." })
    let end = await haul.termination()
    #expect(!end.signaled && end.status == 0, "\(end)\n\(text)")
    #expect(text.contains("✓ saved f"), "\(text)")
    #expect(CommandEndToEndTests.holds(directory.file("f"), body), "file bytes differ")
  }

  /// Fills the pipe behind `descriptor` so that the next write to it blocks; the descriptor is
  /// left blocking (the child shares its flags).
  static func fill(_ descriptor: Int32) throws {
    let flags = fcntl(descriptor, F_GETFL)
    _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    defer { _ = fcntl(descriptor, F_SETFL, flags) }
    // Whole pages, then single bytes for whatever room is left.
    for size in [4096, 1] {
      let junk = [UInt8](repeating: UInt8(ascii: "."), count: size)
      while true {
        let written = junk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written > 0 { continue }
        if errno == EINTR { continue }
        try #require(errno == EAGAIN, "the pipe could not be filled (errno \(errno))")
        break
      }
    }
  }

  /// Everything read from `descriptor` until its end, on a thread outside the test pool.
  static func readToEnd(_ descriptor: Int32) async -> String {
    await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
          let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
          if count < 0, errno == EINTR { continue }
          guard count > 0 else { break }
          data += buffer[0..<count]
        }
        continuation.resume(returning: String(decoding: data, as: UTF8.self))
      }
    }
  }
}
