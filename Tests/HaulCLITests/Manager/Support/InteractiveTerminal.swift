import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul` with its standard input, output and error on a pseudo-terminal (openpty), driven like a
/// user at a keyboard: keys in, everything drawn recorded. Waiting is by content, each wait
/// bounded only so that a hang fails the test instead of CI.
final class InteractiveTerminal: @unchecked Sendable {
  // `output` is guarded by `lock`; the descriptors and `process` are fixed once started.
  private let master: Int32
  private let slave: Int32
  private let lock = NSLock()
  private var output: [UInt8] = []
  private var process: Subprocess?
  private var readerEnded = false

  struct Failure: Error, CustomStringConvertible { let description: String }

  private typealias OpenPTY =
    @convention(c) (
      UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<CChar>?,
      UnsafeRawPointer?, UnsafeRawPointer?
    ) -> Int32

  init(columns: Int, rows: Int) throws {
    // glibc has openpty in libc (2.34 and later); Swift's Glibc module does not declare it.
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "openpty") else {
      throw Failure(description: "libc has no openpty")
    }
    let openpty = unsafeBitCast(symbol, to: OpenPTY.self)
    var master: Int32 = -1
    var slave: Int32 = -1
    var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
    guard withUnsafePointer(to: &size, { openpty(&master, &slave, nil, nil, UnsafeRawPointer($0)) }) == 0
    else {
      throw Failure(description: "openpty: errno \(errno)")
    }
    self.master = master
    self.slave = slave
    let thread = Thread { [self] in readUntilClosed() }
    thread.start()
  }

  deinit { close(master) }

  /// Starts `haul ARGUMENTS…` on the terminal; killed after `limit` seconds if still running (a
  /// bound on a hang, far above what the tests take).
  func start(_ arguments: [String], in directory: URL, limit: Double = 300) throws {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    let process = try Subprocess.spawn(
      binary.path, arguments, currentDirectory: directory.path, stdin: slave, stdout: slave, stderr: slave)
    self.process = process
    let watchdog = Thread {
      if process.waitUntilExit(seconds: limit) == nil { process.signal(SIGKILL) }
    }
    watchdog.start()
  }

  /// Everything drawn so far.
  var drawn: String { lock.withLock { String(decoding: output, as: UTF8.self) } }

  /// How many bytes were drawn so far (for `waitFor(_:after:)`).
  var mark: Int { lock.withLock { output.count } }

  /// Types `text` (escape sequences included).
  func type(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
  }

  /// Waits until what was drawn after `mark` contains `text`.
  func waitFor(_ text: String, after mark: Int = 0) async throws {
    try await CatalogFixture.waitUntil("the terminal shows \(text.debugDescription)") {
      lock.withLock { String(decoding: output[min(mark, output.count)...], as: UTF8.self) }.contains(text)
    }
  }

  /// Sets the terminal's size and tells the process, as a terminal emulator does.
  func resize(columns: Int, rows: Int) {
    var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
    #if canImport(Glibc)
      _ = ioctl(master, UInt(TIOCSWINSZ), &size)
    #else
      _ = ioctl(master, TIOCSWINSZ, &size)
    #endif
    signal(SIGWINCH)
  }

  func signal(_ number: Int32) {
    process?.signal(number)
  }

  /// The process's id, once started.
  var pid: Int32? { process?.pid }

  /// The terminal's settings now (raw mode or not).
  var settings: termios {
    var settings = termios()
    _ = tcgetattr(slave, &settings)
    return settings
  }

  /// The process's state as /proc tells it (`T`: stopped); nil when it cannot be told.
  var processState: Character? {
    guard let pid,
      let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let name = text.lastIndex(of: ")")
    else { return nil }
    return text[name...].dropFirst().first { $0 != " " }
  }

  /// What was drawn after `mark`.
  func drawn(after mark: Int) -> String {
    lock.withLock { String(decoding: output[min(mark, output.count)...], as: UTF8.self) }
  }

  /// Waits for the end: its exit status, and the terminal's settings it left. Then closes the
  /// terminal (the reading thread ends).
  func wait() async throws -> (status: Int32, settings: termios) {
    let process = try #require(process)
    let end = await process.termination()
    var settings = termios()
    _ = tcgetattr(slave, &settings)
    // With the last slave descriptor closed, the reader gets what is left, then EIO.
    close(slave)
    try await CatalogFixture.waitUntil("the terminal is read to its end") { lock.withLock { readerEnded } }
    return (end.status, settings)
  }

  private func readUntilClosed() {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
      if count < 0, errno == EINTR { continue }
      if count <= 0 { break }
      lock.withLock { output.append(contentsOf: buffer[0..<count]) }
    }
    lock.withLock { readerEnded = true }
  }
}
