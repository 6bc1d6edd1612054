import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// FTP through libcurl, resumed with the same state and validators as HTTP: the server's size
/// (SIZE) and modification time (MDTM) stand for Content-Range's total and Last-Modified.
/// The server is pyftpdlib (Debian: python3-pyftpdlib), started by each test on a free port.
@Suite(
  "FTP downloads and resume", .timeLimit(.minutes(3)),
  .enabled(
    if: FTPServer.isInstalled || TestEnvironment.isCI,
    "pyftpdlib is not installed (Debian: python3-pyftpdlib); skipped"))
struct FTPTests {
  @Test func fullAndSegmentedDownloads() async throws {
    let server = try await FTPServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 3 << 20, seed: 81)
    try server.publish("f.bin", body, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    for connections in ["1", "4"] {
      let outcome = try await CurlFlagsEndToEndTests.haul([
        "--json", "-x", connections, "-o", directory.file("f\(connections).bin").path, server.url("f.bin"),
      ])
      #expect(outcome.status == 0, "\(outcome)")
      expectBytes(directory.contents("f\(connections).bin"), equal: body)
      #expect(outcome.event("started")?["total"] == String(body.count))
    }
    let missing = try await CurlFlagsEndToEndTests.haul([
      "-q", "-o", directory.file("x.bin").path, server.url("none.bin"),
    ])
    #expect(missing.status == 8, "a missing file is the server's 404: \(missing)")
    #expect(missing.stderr.contains("404"), "\(missing)")
  }

  /// Interrupted, then run again: only the rest is fetched (REST), and the file is exact. When the
  /// file changed on the server in between (another MDTM), the rerun starts over instead of splicing.
  @Test func resumeAndChangedFile() async throws {
    let server = try await FTPServer.start()
    defer { server.stop() }
    let old = TestResource.random(size: 4 << 20, seed: 82)
    try server.publish("r.bin", old, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    let arguments = ["--json", "-x", "1", "-o", directory.file("r.bin").path, server.url("r.bin")]

    let held = try await HaulBinary.interrupt(arguments, part: directory.file("r.bin.part"))
    let resumed = try await CurlFlagsEndToEndTests.haul(arguments)
    #expect(resumed.status == 0, "\(resumed)")
    expectBytes(directory.contents("r.bin"), equal: old)
    let from = Int64(resumed.event("started")?["resumed_from"] ?? "") ?? 0
    #expect(from >= held && from > 0, "resumed from \(from), held \(held): \(resumed)")
    #expect(resumed.event("completed")?["received"] == String(Int64(old.count) - from), "\(resumed)")

    try FileManager.default.removeItem(at: directory.file("r.bin"))
    _ = try await HaulBinary.interrupt(arguments, part: directory.file("r.bin.part"))
    let new = TestResource.random(size: 4 << 20, seed: 83)  // same size: only MDTM tells them apart
    try server.publish("r.bin", new, modified: Date(timeIntervalSince1970: 1_700_003_600))
    let restarted = try await CurlFlagsEndToEndTests.haul(arguments)
    #expect(restarted.status == 0, "\(restarted)")
    expectBytes(directory.contents("r.bin"), equal: new, "old bytes were spliced to new ones")
    #expect(restarted.eventNames.contains("restarted"), "\(restarted)")
  }

  /// `-N` over FTP: MDTM against the local file's time.
  @Test func newerOnly() async throws {
    let server = try await FTPServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 100_000, seed: 84)
    try server.publish("n.bin", body, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    let local = directory.file("n.bin")
    try Data("local copy".utf8).write(to: local)
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_800_000_000)], ofItemAtPath: local.path)
    let kept = try await CurlFlagsEndToEndTests.haul(["-N", "-o", local.path, server.url("n.bin")])
    #expect(kept.status == 0 && kept.stderr.contains("not newer on the server, kept"), "\(kept)")
    #expect(directory.contents("n.bin") == Array("local copy".utf8))

    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_600_000_000)], ofItemAtPath: local.path)
    let fetched = try await CurlFlagsEndToEndTests.haul(["-q", "-N", "-o", local.path, server.url("n.bin")])
    #expect(fetched.status == 0, "\(fetched)")
    expectBytes(directory.contents("n.bin"), equal: body)
  }
}

/// pyftpdlib serving a temporary directory read-only to anonymous users on a free 127.0.0.1 port.
final class FTPServer: Sendable {
  static let python = "/usr/bin/python3"
  static var isInstalled: Bool {
    FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/pyftpdlib/__init__.py")
      && TestEnvironment.executable(python) != nil
  }

  let root: TemporaryDirectory
  let port: Int
  private let process: ChildProcess

  private init(root: TemporaryDirectory, port: Int, process: ChildProcess) {
    self.root = root
    self.port = port
    self.process = process
  }

  static func start() async throws -> FTPServer {
    let root = try TemporaryDirectory()
    for _ in 0..<3 {
      let port = try freeLoopbackPort()
      let process = try ChildProcess.start(
        URL(fileURLWithPath: python),
        ["-m", "pyftpdlib", "-i", "127.0.0.1", "-p", String(port), "-d", root.url.path])
      let deadline = ContinuousClock.now + .seconds(30)
      while process.isRunning, !TestEnvironment.isListening(port: port), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      if process.isRunning, TestEnvironment.isListening(port: port) {
        return FTPServer(root: root, port: port, process: process)
      }
      process.signal(SIGKILL)
      _ = await process.wait()
    }
    Issue.record("pyftpdlib did not start")
    throw CancellationError()
  }

  func url(_ name: String) -> String { "ftp://127.0.0.1:\(port)/\(name)" }

  /// Writes `bytes` as `name` (a new file renamed over the old one) with this modification time.
  func publish(_ name: String, _ bytes: [UInt8], modified: Date) throws {
    let staging = root.file(".staging-\(name)")
    try Data(bytes).write(to: staging)
    try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: staging.path)
    try #require(rename(staging.path, root.file(name).path) == 0, "rename failed: errno \(errno)")
  }

  func stop() { process.signal(SIGKILL) }
}
