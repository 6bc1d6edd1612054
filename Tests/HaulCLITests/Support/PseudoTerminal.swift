import Foundation
import HaulTestSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A pseudo-terminal of a given size, to run `haul` with its standard error on a terminal and
/// record everything it draws (escape sequences included).
final class PseudoTerminal: @unchecked Sendable {
  // `output` is guarded by `lock`; the descriptors are fixed after `init`.
  private let master: Int32
  private let slave: Int32
  private let lock = NSLock()
  private var output = Data()
  private let done = DispatchSemaphore(value: 0)

  struct Failure: Error, CustomStringConvertible { let description: String }

  // Swift's Glibc module leaves out the XSI pseudo-terminal calls; they are in libc all the same.
  private typealias OpenPT = @convention(c) (Int32) -> Int32
  private typealias PTCall = @convention(c) (Int32) -> Int32
  private typealias PTSName = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?

  private static func libc<T>(_ name: String, as type: T.Type) throws -> T {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
      throw Failure(description: "libc has no \(name)")
    }
    return unsafeBitCast(symbol, to: type)
  }

  init(columns: Int, rows: Int) throws {
    let openpt = try Self.libc("posix_openpt", as: OpenPT.self)
    let grantpt = try Self.libc("grantpt", as: PTCall.self)
    let unlockpt = try Self.libc("unlockpt", as: PTCall.self)
    let ptsname = try Self.libc("ptsname", as: PTSName.self)
    master = openpt(O_RDWR | O_NOCTTY)
    guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, let name = ptsname(master) else {
      throw Failure(description: "no pseudo-terminal: errno \(errno)")
    }
    slave = open(name, O_RDWR | O_NOCTTY)
    guard slave >= 0 else {
      throw Failure(description: "cannot open \(String(cString: name)): errno \(errno)")
    }
    var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
    #if canImport(Glibc)
      let request = UInt(TIOCSWINSZ)
    #else
      let request = TIOCSWINSZ
    #endif
    _ = ioctl(master, request, &size)
    // The default settings, as a user's terminal has them (output `\n` arrives as `\r\n`).
    let thread = Thread { [self] in readUntilClosed() }
    thread.start()
  }

  deinit {
    close(master)
  }

  /// Runs `haul` with standard error on the terminal (standard output to a file) to its end.
  func run(_ arguments: [String], in directory: URL) async throws -> (status: Int32, drawn: String) {
    let binary = try requireBinary()
    let process = try Subprocess.spawn(
      binary.path, arguments, currentDirectory: directory.path, stderr: slave)
    let end = await process.termination()
    // The child's copy is closed; closing ours ends the reader (EIO on the master).
    close(slave)
    await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().async { [done] in
        done.wait()
        resume.resume()
      }
    }
    let drawn = lock.withLock { String(decoding: output, as: UTF8.self) }
    return (end.status, drawn)
  }

  private func requireBinary() throws -> URL {
    guard let binary = BinaryTests.binary else {
      throw Failure(description: "the haul executable was not found; build it or set HAUL_BINARY")
    }
    return binary
  }

  private func readUntilClosed() {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
      if count < 0, errno == EINTR { continue }
      if count <= 0 { break }
      lock.withLock { output.append(contentsOf: buffer[0..<count]) }
    }
    done.signal()
  }
}

/// What a terminal shows, reduced from the bytes drawn on it (enough of VT100 for haul's output:
/// `\r`, `\n`, cursor up, clear to end of line and of screen).
struct ScreenModel {
  private(set) var lines: [String] = [""]
  private var row = 0
  private var column = 0
  /// Every line as it was just before each `\r` or cursor movement left it (the frames drawn).
  private(set) var history: [String] = []

  init(_ drawn: String) {
    var scalars = Array(drawn.unicodeScalars)[...]
    while let scalar = scalars.popFirst() {
      switch scalar {
      case "\r":
        history.append(lines[row])
        column = 0
      case "\n":
        history.append(lines[row])
        row += 1
        if row == lines.count { lines.append("") }
      case "\u{1B}":
        guard scalars.first == "[" else { continue }
        scalars.removeFirst()
        var digits = ""
        while let next = scalars.first, ("0"..."9").contains(next) {
          digits.unicodeScalars.append(scalars.removeFirst())
        }
        guard let command = scalars.popFirst() else { break }
        switch command {
        case "A":
          history.append(lines[row])
          row = max(0, row - (Int(digits) ?? 1))
        case "K": lines[row] = String(lines[row].prefix(column))
        case "J":
          lines[row] = String(lines[row].prefix(column))
          lines.removeSubrange((row + 1)...)
        default: break
        }
      default:
        var line = Array(lines[row])
        let character = Character(scalar)
        if column < line.count { line[column] = character } else { line.append(character) }
        lines[row] = String(line)
        column += 1
      }
    }
  }
}
