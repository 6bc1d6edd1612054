import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// How a child process ended, with everything it wrote.
struct ProcessOutcome: Sendable, CustomStringConvertible {
  let status: Int32
  /// Ended by a signal (`status` is then the signal number).
  let signaled: Bool
  let stdout: String
  let stderr: String

  /// `--json` output: one object per line, every value as text (numbers in decimal, null as "null").
  var events: [[String: String]] {
    stdout.split(separator: "\n").compactMap { line in
      guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
        return nil
      }
      return object.mapValues { value in
        if let text = value as? String { return text }
        if value is NSNull { return "null" }
        return "\(value)"
      }
    }
  }

  /// The `event` names of `--json` output, in order.
  var eventNames: [String] { events.compactMap { $0["event"] } }

  /// The first `--json` event named `name`.
  func event(_ name: String) -> [String: String]? { events.first { $0["event"] == name } }

  var description: String {
    "\(signaled ? "signal" : "status") \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
  }
}

/// A child process whose output goes to files (no pipe can fill up and block it), which can be
/// signalled at any moment, and which is awaited without blocking a thread of the test pool.
final class ChildProcess: @unchecked Sendable {
  // `Process` is used only by `start` (before anything else sees it) and through its thread-safe getters.
  private let process: Process
  private let outputs: TemporaryDirectory
  private let ended: AsyncStream<Void>

  var pid: Int32 { process.processIdentifier }

  private init(process: Process, outputs: TemporaryDirectory, ended: AsyncStream<Void>) {
    self.process = process
    self.outputs = outputs
    self.ended = ended
  }

  static func start(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
    currentDirectory: URL? = nil
  ) throws -> ChildProcess {
    let outputs = try TemporaryDirectory()
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment {
      process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    _ = FileManager.default.createFile(atPath: outputs.file("stdout").path, contents: nil)
    _ = FileManager.default.createFile(atPath: outputs.file("stderr").path, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: outputs.file("stdout"))
    process.standardError = try FileHandle(forWritingTo: outputs.file("stderr"))
    process.standardInput = FileHandle.nullDevice
    let (ended, continuation) = AsyncStream<Void>.makeStream()
    process.terminationHandler = { _ in
      continuation.yield()
      continuation.finish()
    }
    try spawnWithDefaultSignals(process)
    return ChildProcess(process: process, outputs: outputs, ended: ended)
  }

  /// `process.run()` on a fresh thread whose signal mask is empty. Swift concurrency runs tests on
  /// libdispatch workers, which block most signals; a child spawned from one inherits that mask and
  /// would never see SIGTERM or SIGINT (lighttpd then cannot be stopped, `haul` cannot be interrupted).
  static func spawnWithDefaultSignals(_ process: Process) throws {
    final class Box: @unchecked Sendable {
      let process: Process
      var error: (any Error)?
      let done = DispatchSemaphore(value: 0)
      init(_ process: Process) { self.process = process }
    }
    let box = Box(process)
    let thread = Thread {
      var empty = sigset_t()
      sigemptyset(&empty)
      pthread_sigmask(SIG_SETMASK, &empty, nil)
      do { try box.process.run() } catch { box.error = error }
      box.done.signal()
    }
    thread.start()
    box.done.wait()
    if let error = box.error { throw error }
  }

  /// Sends `signal` (SIGKILL by default) unless the process has already ended.
  func signal(_ number: Int32 = SIGKILL) {
    if process.isRunning { kill(process.processIdentifier, number) }
  }

  var isRunning: Bool { process.isRunning }

  /// Sends `signal` after `seconds`, timed on a thread of its own: the test pool can be starved
  /// by other suites on a small machine, and a late kill would land after the download finished.
  func signal(_ number: Int32 = SIGKILL, after seconds: Double) {
    let thread = Thread { [self] in
      usleep(UInt32(max(0, seconds) * 1_000_000))
      signal(number)
    }
    thread.start()
  }

  /// Waits for the end (only one caller may wait).
  func wait() async -> ProcessOutcome {
    for await _ in ended {}
    // Foundation may call the termination handler a moment before `isRunning` turns false,
    // and reading the status of a running process traps.
    while process.isRunning { try? await Task.sleep(for: .milliseconds(2)) }
    let stdout = (try? String(contentsOf: outputs.file("stdout"), encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOf: outputs.file("stderr"), encoding: .utf8)) ?? ""
    return ProcessOutcome(
      status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
      stdout: stdout, stderr: stderr)
  }
}

/// Running the built `haul`.
enum HaulBinary {
  static func start(_ arguments: [String]) throws -> ChildProcess {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    return try ChildProcess.start(binary, arguments)
  }

  /// Runs `haul` to its end.
  static func run(_ arguments: [String]) async throws -> ProcessOutcome {
    try await start(arguments).wait()
  }
}

/// External tools some suites need, and whether a missing one may be skipped.
enum TestEnvironment {
  /// Under CI every tool the suites use must be present: a missing one fails instead of skipping.
  static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false

  static func executable(_ path: String) -> URL? {
    FileManager.default.isExecutableFile(atPath: path) ? URL(fileURLWithPath: path) : nil
  }

  /// Runs a tool to its end (blocking; for quick setup commands like `mount` and `openssl`).
  @discardableResult
  static func runTool(_ path: String, _ arguments: [String]) throws -> ProcessOutcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = try TemporaryDirectory()
    _ = FileManager.default.createFile(atPath: output.file("out").path, contents: nil)
    _ = FileManager.default.createFile(atPath: output.file("err").path, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: output.file("out"))
    process.standardError = try FileHandle(forWritingTo: output.file("err"))
    process.standardInput = FileHandle.nullDevice
    try ChildProcess.spawnWithDefaultSignals(process)
    process.waitUntilExit()
    return ProcessOutcome(
      status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
      stdout: (try? String(contentsOf: output.file("out"), encoding: .utf8)) ?? "",
      stderr: (try? String(contentsOf: output.file("err"), encoding: .utf8)) ?? "")
  }

  /// A port on 127.0.0.1 that was free a moment ago (for servers that need one in their config).
  static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw POSIXError(.EINVAL) }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Whether something accepts TCP connections on 127.0.0.1:`port`.
  static func isListening(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }
}

/// The sidecar `NAME.haul` as the tests read it: independently of the library's decoder.
struct Sidecar {
  struct Range: Decodable { let start: Int64; let end: Int64 }
  struct Body: Decodable {
    let url: String
    let totalBytes: Int64?
    let etag: String?
    let ranges: [Range]
  }
  let body: Body

  /// Bytes claimed from offset 0 without a gap.
  /// Bytes claimed in all ranges (several after a segmented download).
  var claimedBytes: Int64 { body.ranges.reduce(0) { $0 + ($1.end - $1.start) } }

  var claimedPrefix: Int64 {
    guard let first = body.ranges.first, first.start == 0 else { return 0 }
    return first.end
  }

  struct Malformed: Error, CustomStringConvertible {
    let description: String
  }

  /// Reads `path`; nil when there is none. Throws when it is not three well-formed lines.
  static func read(_ path: String) throws -> Sidecar? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    guard lines.count == 4, lines[3].isEmpty else {
      throw Malformed(description: "the sidecar \(path) is not three lines")
    }
    guard lines[0] == "haul-state 1" else {
      throw Malformed(description: "unexpected sidecar header '\(lines[0])'")
    }
    guard lines[2].hasPrefix("sha256 "), lines[2].count == 7 + 64 else {
      throw Malformed(description: "no sha256 line in the sidecar \(path)")
    }
    return Sidecar(body: try JSONDecoder().decode(Body.self, from: Data(lines[1].utf8)))
  }
}

extension TemporaryDirectory {
  /// The bytes of the file `name` inside, or nil.
  func contents(_ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: file(name).path).map { Array($0) }
  }

  func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: file(name).path) }
}

/// Records an issue unless `actual` holds exactly `expected`, saying where they first differ.
/// (`#expect(a == b)` on big byte arrays is avoided on purpose: on failure Swift Testing describes
/// and diffs both operands, which for megabytes takes minutes and looks like a hang.)
func expectBytes(
  _ actual: some Collection<UInt8>, equal expected: some Collection<UInt8>, _ comment: String = "",
  sourceLocation: SourceLocation = #_sourceLocation
) {
  guard let problem = byteMismatch(actual, expected) else { return }
  Issue.record("\(comment.isEmpty ? "" : comment + ": ")\(problem)", sourceLocation: sourceLocation)
}

/// `expectBytes` for a file that may be missing.
func expectBytes(
  _ actual: [UInt8]?, equal expected: some Collection<UInt8>, _ comment: String = "",
  sourceLocation: SourceLocation = #_sourceLocation
) {
  guard let actual else {
    Issue.record(
      "\(comment.isEmpty ? "" : comment + ": ")the file is missing", sourceLocation: sourceLocation)
    return
  }
  expectBytes(actual, equal: expected, comment, sourceLocation: sourceLocation)
}

/// nil when equal, else e.g. "8388608 bytes, expected 8388608; first difference at byte 16384".
/// Compares with memcmp: element-wise loops are slow in debug builds, and files here are megabytes.
func byteMismatch(_ actual: some Collection<UInt8>, _ expected: some Collection<UInt8>) -> String? {
  let a = Array(actual)
  let e = Array(expected)
  let common = min(a.count, e.count)
  let firstDifference: Int? = a.withUnsafeBytes { pa in
    e.withUnsafeBytes { pe in
      guard common > 0, let x = pa.baseAddress, let y = pe.baseAddress, memcmp(x, y, common) != 0 else {
        return nil
      }
      return (0..<common).first { pa[$0] != pe[$0] }
    }
  }
  if firstDifference == nil, a.count == e.count { return nil }
  return "\(a.count) bytes, expected \(e.count); first difference at byte \(firstDifference ?? common)"
}
