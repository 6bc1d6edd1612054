import Dispatch
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The terminal `haul ui` draws on (standard input and output): raw mode (keys as they are
/// typed, no echo, Ctrl-C and Ctrl-Z as keys), the alternate screen and a hidden cursor while it
/// runs; `restore` puts back the settings it found and the screen the user had, once, from any
/// thread. `suspend` gives the terminal back to the shell while the process is stopped (Ctrl-Z)
/// and takes it again when it continues.
final class UITerminal: Sendable {
  private let saved: termios
  private let raw: termios
  private let phase = Locked(Phase.shown)

  private enum Phase {
    /// Raw mode and the alternate screen.
    case shown
    /// Given back to the shell while the process is stopped.
    case suspended
    /// Put back for good.
    case restored
  }

  static let enterScreen = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
  static let leaveScreen = "\u{1B}[0m\u{1B}[2J\u{1B}[?25h\u{1B}[?1049l"

  private init(saved: termios, raw: termios) {
    self.saved = saved
    self.raw = raw
  }

  /// Switches standard input and output to the full-screen view.
  /// - Throws: `.invalidInput` when they are not a terminal (`haul ui` needs one).
  static func enter() throws(HaulError) -> UITerminal {
    try requireTerminal()
    var settings = termios()
    guard tcgetattr(STDIN_FILENO, &settings) == 0 else { throw notATerminal }
    var raw = settings
    raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    let terminal = UITerminal(saved: settings, raw: raw)
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
    let shown = phase.withLock { phase in
      defer { phase = .restored }
      return phase == .shown
    }
    if shown { giveBack() }
  }

  /// Ctrl-Z or SIGTSTP: puts the terminal back as the shell had it, stops the process, and once
  /// it is continued (`fg`) takes the terminal again; the caller then redraws everything. The
  /// process stops itself with SIGSTOP, which nothing catches or holds back (SIGTSTP is caught
  /// here), as shells and programs that catch SIGTSTP do. False, doing nothing, after `restore`.
  @discardableResult
  func suspend() -> Bool {
    let shown = phase.withLock { phase in
      guard phase == .shown else { return false }
      phase = .suspended
      return true
    }
    guard shown else { return false }
    giveBack()
    // raise(3) sends it to this thread: it stops before raise returns, with every other thread.
    raise(SIGSTOP)
    let resumed = phase.withLock { phase in
      guard phase == .suspended else { return false }
      phase = .shown
      return true
    }
    if resumed { take() }
    return true
  }

  /// After SIGCONT that `suspend` did not expect (another process stopped this one): raw mode
  /// again (a shell may have reset the terminal meanwhile) and a cleared screen to redraw on.
  func retake() {
    if phase.withLock({ $0 == .shown }) { take() }
  }

  private func giveBack() {
    write(Self.leaveScreen)
    var settings = saved
    // TCSAFLUSH: keys typed for the view and not read yet do not reach the shell.
    _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
  }

  private func take() {
    var settings = raw
    // TCSANOW: what was typed after fg is kept.
    _ = tcsetattr(STDIN_FILENO, TCSANOW, &settings)
    write(Self.enterScreen)
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
  /// SIGTSTP (from `kill`: the terminal's Ctrl-Z arrives as a key).
  case suspend
  /// SIGCONT.
  case continued
  case tick
  /// What the backend answered (`UIWorker`).
  case refreshed(Result<UISnapshot, HaulError>)
  /// A command was carried out, or refused: what to say.
  case performed(String)
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
  /// Resizes, and job control's stop and continue.
  static let otherSignals = [SIGWINCH, SIGTSTP, SIGCONT]

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
    let signals = Self.stopSignals + Self.otherSignals
    let made = signals.map { number -> any DispatchSourceSignal in
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      let input: UIInput =
        switch number {
        case SIGWINCH: .resized
        case SIGTSTP: .suspend
        case SIGCONT: .continued
        default: .stop
        }
      source.setEventHandler { continuation.yield(input) }
      return source
    }
    // As `InterruptHandler`'s: once registered, each signal reaches its source.
    SignalRouting.start(made, for: signals)
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

  /// Hands the loop what a worker got (`UIWorker`).
  func deliver(_ input: UIInput) { continuation.yield(input) }

  /// Ends the ticker and the signal sources; the stop signals get their default action back
  /// (a second Ctrl-C while the downloads are saved leaves at once).
  func stop() {
    ticker.withLock { $0?.cancel() }
    let made = sources.withLock { sources in
      defer { sources.removeAll() }
      return sources
    }
    queue.sync { SignalRouting.cancel(made) }
    for number in Self.stopSignals + [SIGTSTP, SIGCONT] { signal(number, SIG_DFL) }
    continuation.finish()
  }
}
