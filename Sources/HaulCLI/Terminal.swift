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

  /// Standard error's width in columns, or 80 when it cannot be told.
  static func stderrWidth() -> Int {
    var size = winsize()
    #if canImport(Glibc)
      let request = UInt(TIOCGWINSZ)
    #else
      let request = TIOCGWINSZ
    #endif
    guard ioctl(STDERR_FILENO, request, &size) == 0, size.ws_col > 0 else { return 80 }
    return Int(size.ws_col)
  }

  /// Writes all of `text` to a file descriptor, retrying short writes and EINTR.
  static func write(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)
    var offset = 0
    bytes.withUnsafeMutableBytes { buffer in
      guard let base = buffer.baseAddress else { return }
      while offset < buffer.count {
        #if canImport(Glibc)
          let written = Glibc.write(descriptor, base + offset, buffer.count - offset)
        #else
          let written = Darwin.write(descriptor, base + offset, buffer.count - offset)
        #endif
        if written < 0 {
          if errno == EINTR { continue }
          return
        }
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
