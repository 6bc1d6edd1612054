import Dispatch
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The terminal `haul ui` draws on (standard input and output): raw mode (keys as they are
/// typed, no echo, Ctrl-C as a key), the alternate screen and a hidden cursor while it runs;
/// `restore` puts back the settings it found and the screen the user had, once, from any thread.
final class UITerminal: Sendable {
  private let saved: termios
  private let restored = Locked(false)

  static let enterScreen = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
  static let leaveScreen = "\u{1B}[0m\u{1B}[2J\u{1B}[?25h\u{1B}[?1049l"

  private init(saved: termios) { self.saved = saved }

  /// Switches standard input and output to the full-screen view.
  /// - Throws: `.invalidInput` when they are not a terminal (`haul ui` needs one).
  static func enter() throws(HaulError) -> UITerminal {
    try requireTerminal()
    var settings = termios()
    guard tcgetattr(STDIN_FILENO, &settings) == 0 else { throw notATerminal }
    let terminal = UITerminal(saved: settings)
    var raw = settings
    raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0 else {
      let code = errno
      throw HaulError(
        .generic, "cannot set up the terminal for haul ui: \(String(cString: strerror(code)))",
        underlying: SystemError("tcsetattr", errno: code))
    }
    terminal.write(enterScreen)
    return terminal
  }

  /// - Throws: `.invalidInput` unless standard input and output are a terminal.
  static func requireTerminal() throws(HaulError) {
    guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else { throw notATerminal }
  }

  private static var notATerminal: HaulError {
    HaulError(
      .invalidInput, "haul ui needs a terminal: its standard input and output are not one",
      hint: "haul ls lists the downloads and haul run runs them, without a terminal")
  }

  /// The terminal's size now (80x24 when it cannot be told).
  var size: TerminalSize { TerminalSize.of(STDOUT_FILENO) ?? TerminalSize(columns: 80, rows: 24) }

  func write(_ text: String) { Terminal.write(text, to: STDOUT_FILENO) }

  /// Leaves the alternate screen, shows the cursor and puts back the settings (only once).
  func restore() {
    let first = restored.withLock { done in
      defer { done = true }
      return !done
    }
    guard first else { return }
    write(Self.leaveScreen)
    var settings = saved
    _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
  }
}

/// What wakes `haul ui`'s loop.
enum UIInput: Sendable {
  case bytes([UInt8])
  /// Standard input ended or failed (the terminal is gone).
  case inputEnded
  case resized
  /// SIGINT, SIGTERM or SIGHUP.
  case stop
  case tick
}

/// The sources of `UIInput`: a thread reading standard input, signal sources, a ticker, and
/// `requestStop`. They end with `stop()`, except the reading thread, which blocks in read(2)
/// until the process ends.
final class UIInputs: Sendable {
  let stream: AsyncStream<UIInput>
  private let continuation: AsyncStream<UIInput>.Continuation
  private let queue = DispatchQueue(label: "haul.ui.signals")
  // Made in `start`, cancelled in `stop()`.
  private let sources = Locked<[any DispatchSourceSignal]>([])
  private let ticker = Locked<Task<Void, Never>?>(nil)
  static let stopSignals = [SIGINT, SIGTERM, SIGHUP]

  /// The stream, with nothing feeding it yet but `requestStop`.
  init() {
    (stream, continuation) = AsyncStream<UIInput>.makeStream(bufferingPolicy: .unbounded)
  }

  /// Starts the sources: a tick every `tick`, the signals, and the thread reading standard input
  /// (once the terminal is in raw mode).
  func start(tick: Duration) {
    let continuation = continuation
    ticker.withLock {
      $0 = Task {
        while !Task.isCancelled {
          try? await Task.sleep(for: tick)
          continuation.yield(.tick)
        }
      }
    }
    let made = (Self.stopSignals + [SIGWINCH]).map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { continuation.yield(number == SIGWINCH ? .resized : .stop) }
      source.resume()
      return source
    }
    sources.withLock { $0 = made }
    Detached.thread {
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = buffer.withUnsafeMutableBytes { raw in
          SystemCall.retryingEINTR { read(STDIN_FILENO, raw.baseAddress, raw.count) }
        }
        guard count > 0 else {
          continuation.yield(.inputEnded)
          return
        }
        continuation.yield(.bytes(Array(buffer[..<count])))
      }
    }
  }

  /// Stops the view as a stop signal does (`aria2.shutdown` on the control socket).
  func requestStop() { continuation.yield(.stop) }

  /// Ends the ticker and the signal sources; the stop signals get their default action back
  /// (a second Ctrl-C while the downloads are saved leaves at once).
  func stop() {
    ticker.withLock { $0?.cancel() }
    let made = sources.withLock { sources in
      defer { sources.removeAll() }
      return sources
    }
    queue.sync {
      for source in made {
        source.setEventHandler(handler: nil)
        source.cancel()
      }
    }
    for number in Self.stopSignals { signal(number, SIG_DFL) }
    continuation.finish()
  }
}
