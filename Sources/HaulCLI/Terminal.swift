import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The process's standard streams.
enum Terminal {
  static let clearToEnd = "\u{1B}[K"

  /// Whether standard error is a terminal.
  static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

  /// Moves the cursor up `lines` lines (nothing for 0).
  static func up(_ lines: Int) -> String { lines > 0 ? "\u{1B}[\(lines)A" : "" }
  /// Clears from the cursor to the end of the screen.
  static let clearBelow = "\u{1B}[J"

  /// Standard error's width in columns; when the terminal does not tell (a serial console, a
  /// pty whose size was never set), `$COLUMNS` as curl and wget take it, else 80.
  static func stderrWidth() -> Int {
    width(
      reported: stderrSize().map { Int($0.ws_col) }, columns: getenv("COLUMNS").map { String(cString: $0) })
  }

  /// The width to draw in: the terminal's when it reports one, else `columns` when it is a
  /// positive number, else 80.
  static func width(reported: Int?, columns: String?) -> Int {
    if let reported, reported > 0 { return reported }
    if let columns, let count = Int(columns), count > 0 { return count }
    return 80
  }

  /// Standard error's height in lines, or 24 when it cannot be told.
  static func stderrHeight() -> Int {
    guard let size = stderrSize(), size.ws_row > 0 else { return 24 }
    return Int(size.ws_row)
  }

  private static func stderrSize() -> winsize? {
    var size = winsize()
    #if canImport(Glibc)
      let request = UInt(TIOCGWINSZ)
    #else
      let request = TIOCGWINSZ
    #endif
    return ioctl(STDERR_FILENO, request, &size) == 0 ? size : nil
  }

  /// Writes all of `text` to a file descriptor, retrying short writes and EINTR.
  static func write(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)
    var offset = 0
    bytes.withUnsafeMutableBytes { buffer in
      guard let base = buffer.baseAddress else { return }
      while offset < buffer.count {
        #if canImport(Glibc)
          let written = SystemCall.retryingEINTR {
            Glibc.write(descriptor, base + offset, buffer.count - offset)
          }
        #else
          let written = SystemCall.retryingEINTR {
            Darwin.write(descriptor, base + offset, buffer.count - offset)
          }
        #endif
        // A terminal or pipe that is gone: nothing more can be shown.
        guard written > 0 else { return }
        offset += written
      }
    }
  }
}

/// Where output goes; tests capture it.
struct OutputSink: Sendable {
  let stdout: @Sendable (String) -> Void
  let stderr: @Sendable (String) -> Void

  static let standard = OutputSink(
    stdout: { Terminal.write($0, to: STDOUT_FILENO) },
    stderr: { Terminal.write($0, to: STDERR_FILENO) })
}
