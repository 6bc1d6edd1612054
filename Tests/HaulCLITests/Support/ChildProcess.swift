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
final class ChildProcess: Sendable {
  private let child: Subprocess
  private let outputs: TemporaryDirectory

  var pid: Int32 { child.pid }

  private init(child: Subprocess, outputs: TemporaryDirectory) {
    self.child = child
    self.outputs = outputs
  }

  /// Starts `executable`; `environment` is added to this process's. A server that forks
  /// workers (nginx) starts with `newSession`, so `signalGroup` reaches them all.
  static func start(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
    currentDirectory: URL? = nil, newSession: Bool = false
  ) throws -> ChildProcess {
    let outputs = try TemporaryDirectory()
    let stdout = try OutputFile(outputs.file("stdout").path)
    let stderr = try OutputFile(outputs.file("stderr").path)
    let child = try Subprocess.spawn(
      executable.path, arguments,
      environment: environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } },
      currentDirectory: currentDirectory?.path, stdout: stdout.descriptor, stderr: stderr.descriptor,
      newSession: newSession)
    return ChildProcess(child: child, outputs: outputs)
  }

  /// Sends `signal` (SIGKILL by default) unless the process has already ended.
  func signal(_ number: Int32 = SIGKILL) { child.signal(number) }

  var isRunning: Bool { child.isRunning }

  /// Sends `number` to every process of the child's session (started with `newSession`): a
  /// server's workers that outlived their master are not left running after the test.
  func signalGroup(_ number: Int32) { kill(-child.pid, number) }

  /// Sends `signal` after `seconds`, timed on a thread of its own: the test pool can be starved
  /// by other suites on a small machine, and a late kill would land after the download finished.
  /// The thread ends with the child and holds only it, not this object, whose output directory
  /// is removed when the test lets go of it.
  func signal(_ number: Int32 = SIGKILL, after seconds: Double) {
    let thread = Thread { [child] in
      if child.waitUntilExit(seconds: max(0, seconds)) == nil { child.signal(number) }
    }
    thread.start()
  }

  /// Waits for the end, with everything the child wrote.
  func wait() async -> ProcessOutcome {
    let end = await child.termination()
    let stdout = (try? String(contentsOf: outputs.file("stdout"), encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOf: outputs.file("stderr"), encoding: .utf8)) ?? ""
    return ProcessOutcome(status: end.status, signaled: end.signaled, stdout: stdout, stderr: stderr)
  }
}

/// Running the built `haul`.
enum HaulBinary {
  static func start(_ arguments: [String]) throws -> ChildProcess {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    return try ChildProcess.start(binary, arguments)
  }

  /// Runs `haul` with `arguments`, held to 256 KiB/s, until its partial file `part` holds
  /// 256 KiB, then stops it with SIGINT (which keeps the partial and its state); returns the bytes
  /// the partial held. On a starved machine the signal can come after the last byte: then the
  /// finished file is removed and it runs again. `start` starts it (with a server's environment).
  static func interrupt(
    _ arguments: [String], part: URL, start: ([String]) throws -> ChildProcess = HaulBinary.start
  ) async throws -> Int64 {
    func size() -> Int64 {
      ((try? FileManager.default.attributesOfItem(atPath: part.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
    for _ in 0..<3 {
      let process = try start(arguments + ["--limit-rate", "256K"])
      // Only bounds a hang: no assertion on time.
      let deadline = ContinuousClock.now + .seconds(60)
      while process.isRunning, size() < 256 << 10, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      process.signal(SIGINT)
      let outcome = await process.wait()
      if outcome.status == 130 { return size() }
      try #require(outcome.status == 0, "expected an interrupted run: \(outcome)")
      try FileManager.default.removeItem(at: part.deletingPathExtension())
    }
    Issue.record("haul finished before it could be interrupted, three times")
    throw CancellationError()
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
    let output = try Subprocess.capture(path, arguments)
    return ProcessOutcome(
      status: output.termination.status, signaled: output.termination.signaled, stdout: output.stdoutText,
      stderr: output.stderrText)
  }

  /// Whether process `pid` itself has a socket listening on TCP `port` (Linux's /proc): a port
  /// chosen free may be taken by another test's server before the process binds it, and
  /// `isListening` would then answer for that other server.
  static func listens(pid: Int32, port: Int) -> Bool {
    let wanted = String(format: "%04X", port)
    var inodes: Set<String> = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
      guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
      for line in text.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        // local_address is ADDRESS:PORT in hex; state 0A is LISTEN; the inode is the 10th field.
        guard fields.count > 9, fields[1].hasSuffix(":" + wanted), fields[3] == "0A" else { continue }
        inodes.insert(String(fields[9]))
      }
    }
    guard !inodes.isEmpty,
      let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
    else { return false }
    return descriptors.contains { descriptor in
      guard
        let target = try? FileManager.default.destinationOfSymbolicLink(
          atPath: "/proc/\(pid)/fd/\(descriptor)"),
        target.hasPrefix("socket:[")
      else { return false }
      return inodes.contains(String(target.dropFirst("socket:[".count).dropLast()))
    }
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
