import CTestSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// How a child process ended: its exit status, or the signal that ended it.
public struct Termination: Sendable, Equatable, CustomStringConvertible {
  /// The exit status, or the signal number when `signaled`.
  public let status: Int32
  public let signaled: Bool

  public init(status: Int32, signaled: Bool) {
    self.status = status
    self.signaled = signaled
  }

  /// Decodes a `waitpid` status.
  init(waitStatus: Int32) {
    let signal = waitStatus & 0x7f
    self.init(status: signal == 0 ? (waitStatus >> 8) & 0xff : signal, signaled: signal != 0)
  }

  public var description: String { signaled ? "signal \(status)" : "status \(status)" }
}

/// A child process of a test, spawned with `posix_spawn` and reaped by a thread of its own.
///
/// Foundation's `Process` was not usable here: on Linux it learns of a child's end from a socket
/// the child inherits, and that socket lived on in the child's descendants (nginx workers, a
/// PostgreSQL server, a daemon's children) and, through concurrent spawns, in unrelated children.
/// Such a child's end was then never reported, and the full suite waited forever. Here the child
/// gets only its three standard descriptors, and its end is `waitid` on its own pid.
///
///     let child = try Subprocess.spawn("/bin/echo", ["hi"], stdout: file)
///     let end = await child.termination()
public final class Subprocess: @unchecked Sendable {
  public let pid: Int32
  // Guards `ended` and `waiters`; the reaper thread takes it to record the end.
  private let condition = NSCondition()
  private var ended: Termination?
  private var waiters: [CheckedContinuation<Termination, Never>] = []

  private init(pid: Int32) { self.pid = pid }

  /// Starts `executable` with `arguments` (not including argv[0]). `environment` is the whole
  /// environment (nil: this process's). Standard descriptors that are nil read or write
  /// /dev/null; the ones given stay the caller's to close.
  public static func spawn(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    currentDirectory: String? = nil, stdin: Int32? = nil, stdout: Int32? = nil, stderr: Int32? = nil,
    newSession: Bool = false
  ) throws -> Subprocess {
    let null = open("/dev/null", O_RDWR | O_CLOEXEC)
    guard null >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(null) }
    var environment = environment ?? ProcessInfo.processInfo.environment
    // Under AddressSanitizer (CI's second run) the children are sanitized programs too. Their
    // leak check at exit would count what their still-suspended tasks hold when `haul` calls
    // exit() as leaked and turn a clean run into status 1; leaks are checked in this process,
    // where the library's objects are released and the check means something.
    if ctestsupport_address_sanitizer() == 1 {
      environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "detect_leaks=0"
    }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv { free(pointer) }
      for pointer in envp { free(pointer) }
    }
    var pid: Int32 = 0
    let result = argv.withUnsafeBufferPointer { argvBuffer in
      envp.withUnsafeBufferPointer { envpBuffer in
        ctestsupport_spawn(
          &pid, executable, argvBuffer.baseAddress, envpBuffer.baseAddress, currentDirectory,
          stdin ?? null, stdout ?? null, stderr ?? null, newSession ? 1 : 0)
      }
    }
    guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
    let child = Subprocess(pid: pid)
    let reaper = Thread { child.reap() }
    reaper.start()
    return child
  }

  /// Waits (without reaping) until the child ended, then records its end and reaps it under the
  /// lock, so `signal` never reaches a recycled pid.
  private func reap() {
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1, errno == EINTR {}
    condition.lock()
    var status: Int32 = 0
    var reaped: Int32
    repeat { reaped = waitpid(pid, &status, 0) } while reaped == -1 && errno == EINTR
    let end = reaped == pid ? Termination(waitStatus: status) : Termination(status: -1, signaled: false)
    ended = end
    let resumed = waiters
    waiters = []
    condition.broadcast()
    condition.unlock()
    for waiter in resumed { waiter.resume(returning: end) }
  }

  /// Whether the child has not ended yet.
  public var isRunning: Bool {
    condition.lock()
    defer { condition.unlock() }
    return ended == nil
  }

  /// Sends `number` unless the child has already ended (and been reaped).
  public func signal(_ number: Int32) {
    condition.lock()
    defer { condition.unlock() }
    if ended == nil { kill(pid, number) }
  }

  /// The child's end, once it came.
  public func termination() async -> Termination {
    await withCheckedContinuation { continuation in
      condition.lock()
      if let ended {
        condition.unlock()
        continuation.resume(returning: ended)
      } else {
        waiters.append(continuation)
        condition.unlock()
      }
    }
  }

  /// Blocks the calling thread until the child ended (for setup code that is not async).
  public func waitUntilExit() -> Termination {
    condition.lock()
    defer { condition.unlock() }
    while ended == nil { condition.wait() }
    return ended ?? Termination(status: -1, signaled: false)
  }

  /// Blocks until the child ended or `seconds` passed; nil on timeout.
  public func waitUntilExit(seconds: Double) -> Termination? {
    let deadline = Date(timeIntervalSinceNow: seconds)
    condition.lock()
    defer { condition.unlock() }
    while ended == nil, condition.wait(until: deadline) {}
    return ended
  }
}

/// A file a child writes its output to.
public final class OutputFile: @unchecked Sendable {
  public let path: String
  // Set once in init; `close()` is called by the one thread that spawned the child.
  public private(set) var descriptor: Int32

  public init(_ path: String) throws {
    self.path = path
    descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
  }

  /// Closes this process's copy (the child keeps its own).
  public func close() {
    if descriptor >= 0 { _ = Glibc.close(descriptor) }
    descriptor = -1
  }

  deinit { close() }
}

/// A finished child's end and its output as bytes.
public struct CapturedOutput: Sendable {
  public let termination: Termination
  public let stdout: [UInt8]
  public let stderr: [UInt8]

  public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
  public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

extension Subprocess {
  /// A pipe whose ends are closed on exec (each is given to a child explicitly).
  public static func makePipe() throws -> (read: Int32, write: Int32) {
    var ends: [Int32] = [0, 0]
    guard ctestsupport_pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
    return (ends[0], ends[1])
  }

  /// Runs `executable` to its end with its output read from pipes while it runs (so a full pipe
  /// never blocks it) and standard input from `stdinFile` (else /dev/null). Blocks the caller.
  public static func capture(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    currentDirectory: String? = nil, stdinFile: String? = nil
  ) throws -> CapturedOutput {
    let (outRead, outWrite) = try makePipe()
    let outEnds = [outRead, outWrite]
    let errEnds: [Int32]
    do {
      let (errRead, errWrite) = try makePipe()
      errEnds = [errRead, errWrite]
    } catch {
      close(outRead)
      close(outWrite)
      throw error
    }
    var input: Int32? = nil
    if let stdinFile {
      input = open(stdinFile, O_RDONLY | O_CLOEXEC)
      if input ?? -1 < 0 { input = nil }
    }
    let child: Subprocess
    do {
      child = try spawn(
        executable, arguments, environment: environment, currentDirectory: currentDirectory, stdin: input,
        stdout: outEnds[1], stderr: errEnds[1])
    } catch {
      for descriptor in outEnds + errEnds { close(descriptor) }
      if let input { close(input) }
      throw error
    }
    close(outEnds[1])
    close(errEnds[1])
    if let input { close(input) }
    let outReader = PipeReader(outEnds[0])
    let errReader = PipeReader(errEnds[0])
    let end = child.waitUntilExit()
    return CapturedOutput(termination: end, stdout: outReader.wait(), stderr: errReader.wait())
  }

  /// `capture` without holding a thread of the test pool.
  public static func capture(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    currentDirectory: String? = nil, stdinFile: String? = nil
  ) async throws -> CapturedOutput {
    try await withCheckedThrowingContinuation { continuation in
      Thread {
        continuation.resume(
          with: Result {
            try capture(
              executable, arguments, environment: environment, currentDirectory: currentDirectory,
              stdinFile: stdinFile)
          })
      }.start()
    }
  }
}

/// Reads a pipe to its end on a thread of its own, then closes it.
final class PipeReader: @unchecked Sendable {
  // `bytes` is written by the reading thread only before it signals `done`.
  private var bytes: [UInt8] = []
  private let done = DispatchSemaphore(value: 0)

  init(_ descriptor: Int32) {
    Thread { [self] in
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        bytes.append(contentsOf: buffer[0..<count])
      }
      close(descriptor)
      done.signal()
    }.start()
  }

  func wait() -> [UInt8] {
    done.wait()
    return bytes
  }
}
