import Dispatch
import FoundationEssentials
import Haul
import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `haul` command: parses arguments, runs the download, reports, and returns the exit status.
enum HaulCommand {
  /// The subcommand a bare word (letters only) seems a typo of, if any.
  static func closeSubcommand(_ word: String) -> String? {
    guard !word.isEmpty, word.allSatisfy({ $0.isASCII && $0.isLowercase }) else { return nil }
    let names = ["worker", "queue", "daemon"] + ManagerCommand.all.map(\.name)
    return CommandLineOptions.suggestion(for: "--" + word, longNames: names).map { String($0.dropFirst(2)) }
  }

  static func run(arguments: [String], sink: OutputSink = .standard) async -> Int32 {
    // Subcommands, recognised only as the first argument (a URL, which starts with its scheme,
    // never equals these words).
    if arguments.first == "worker" {
      return await WorkerCommand.run(Array(arguments.dropFirst()), sink: sink)
    }
    if arguments.first == "queue" {
      return await QueueAdminCommand.run(Array(arguments.dropFirst()), sink: sink)
    }
    if arguments.first == "daemon" {
      return await DaemonCommand.run(Array(arguments.dropFirst()), sink: sink)
    }
    if let name = arguments.first, let subcommand = ManagerCommand.named(name) {
      return await ManagerCommand.run(subcommand, Array(arguments.dropFirst()), sink: sink)
    }
    if let word = arguments.first, let close = closeSubcommand(word) {
      // Else its options would be judged as the download's (`haul lss --catalog X`: "unknown
      // option '--catalog'").
      sink.stderr("haul: '\(word)' is neither a subcommand nor a URL (did you mean 'haul \(close)'?)\n")
      return ExitStatus.usage
    }
    let request: CommandRequest
    do throws(UsageError) {
      request = try CommandLineOptions.parse(arguments)
    } catch {
      sink.stderr(usageErrorText(error))
      return ExitStatus.usage
    }
    switch request {
    case .help:
      sink.stdout(HelpText.text)
      return ExitStatus.success
    case .version:
      sink.stdout("haul \(HaulLibrary.version)\n" + HaulLibrary.libraryVersions.map { $0 + "\n" }.joined())
      return ExitStatus.success
    case .download(var options):
      // A reader that closes its pipe early (`haul -o - URL | head`) must not kill the process
      // (status 141): the write fails with EPIPE instead, and the download ends with exit 3.
      signal(SIGPIPE, SIG_IGN)
      do throws(UsageError) {
        try Credentials.complete(&options)
      } catch {
        sink.stderr(usageErrorText(error))
        return ExitStatus.usage
      }
      if options.isBatch { return await BatchDownload.run(options, sink: sink) }
      if options.newerOnly {
        switch await NewerOnly.decide(options, sink: sink) {
        case .kept(let status): return status
        case .download(let replacing): options.overwrite = options.overwrite || replacing
        }
      }
      return await download(options, sink: sink)
    }
  }

  static func usageErrorText(_ error: UsageError) -> String {
    "haul: \(error.message)\nTry 'haul --help'.\n"
  }

  /// A failure before any download started: its lines and hint, each after `haul: `, and for
  /// invalid input without a hint the pointer to `--help`; with `--json` also a `failed` line.
  static func setupFailure(_ error: HaulError, json: Bool, sink: OutputSink) -> Int32 {
    let error = CommandWording().translate(error)
    if json { sink.stdout(JSONEventLine.encodeFailure(error) + "\n") }
    var lines = error.message.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if let hint = error.hint { lines.append(hint) }
    var text = lines.map { "haul: " + ProgressLine.sanitize($0) + "\n" }.joined()
    if error.category == .invalidInput, error.hint == nil { text += "Try 'haul --help'.\n" }
    sink.stderr(text)
    return ExitStatus.code(for: error)
  }

  static func reporterStyle(for options: CommandLineOptions, stderrIsTerminal: Bool) -> Reporter.Style {
    if options.json { return .json }
    if options.quiet { return .quiet }
    return stderrIsTerminal ? .terminal : .plain
  }

  static func destination(for options: CommandLineOptions) -> DownloadDestination {
    if let output = options.output {
      return output == "-" ? .standardOutput : .file(URL(fileURLWithPath: output))
    }
    return .directory(URL(fileURLWithPath: options.directory ?? ".", isDirectory: true))
  }

  private static func download(_ options: CommandLineOptions, sink: OutputSink) async -> Int32 {
    if options.insecure {
      sink.stderr(
        "haul: warning: --insecure: TLS certificates, host names and SSH host keys are not checked\n")
    }
    let clockStart = ContinuousClock.now
    let style = reporterStyle(for: options, stderrIsTerminal: Terminal.stderrIsTerminal)
    var reporter = Reporter(
      style: style, sink: sink,
      now: { (ContinuousClock.now - clockStart) / .seconds(1) },
      width: { Terminal.stderrWidth() },
      label: NameCollisions.expectedName(source: options.url, destination: destination(for: options)),
      wording: CommandWording(naming: options.output != nil ? .output : .directory))

    let download: Download
    do throws(HaulError) {
      if let directory = options.directory { try LocalDirectory.prepare(directory) }
      download = try Download(
        url: options.url, to: destination(for: options), options: options.downloadOptions)
    } catch {
      reporter.handle(.failed(error))
      return ExitStatus.code(for: error)
    }

    let interrupts = InterruptHandler(
      first: { download.cancel(keepPartial: true) },
      again: {
        // A second Ctrl-C: leave now; the last checkpoint is already on disk.
        sink.stderr(style == .terminal ? "\n" : "")
        exit(ExitStatus.interrupted)
      })
    defer { interrupts.stop() }

    let inputs = DisplayInput.merging(
      download.events, tickEvery: style == .terminal ? Reporter.tickInterval : nil)
    let consumer = Task { [reporter] in
      var reporter = reporter
      for await input in inputs {
        switch input {
        case .event(let event): reporter.handle(event)
        case .tick: reporter.tick()
        }
      }
    }
    let status = await ExitStatus.run(download)
    // The download is over and its files are final: a signal from now on must not turn a
    // complete file into "interrupted" (a second one would exit 130 before the summary).
    interrupts.finish()
    await consumer.value
    return status
  }
}

/// SIGINT, SIGTERM and SIGHUP while a download runs: the first stops it (keeping the partial
/// file), a second one exits at once; after `finish()` they change nothing.
///
/// A signal that arrives before the handler exists (while the process starts, parses its
/// arguments, opens nothing yet) kills the process by its default action: there is nothing to
/// save. From the moment `init` returns, every one is handled, none is lost: `init` waits until
/// the sources are registered before it returns, and never sets `SIG_IGN` on Linux, where that
/// would discard a signal already pending for a source (POSIX: ignoring discards pending signals,
/// blocked or not) and would drop, until the source is registered, those the main thread takes
/// (it waits in `dispatch_main`'s `sigsuspend`, which blocks none).
final class InterruptHandler: @unchecked Sendable {
  /// Set by `haul`'s `main`, which exits as soon as its command returns: `stop()` then leaves
  /// the signals ignored. Back at their default, one arriving between `stop()` and `exit()`
  /// would kill the process (status 143, no last line) after the command had already ended.
  /// Tests that run commands in their own process keep the default.
  static let ignoresSignalsAfterStop = Locked(false)

  private let queue = DispatchQueue(label: "haul.signals")
  private let signals: [Int32]
  // Touched only on `queue` (event handlers) and in `stop()` after cancelling them.
  private var sources: [any DispatchSourceSignal] = []
  private var count = 0
  private var finished = false

  init(
    signals: [Int32] = [SIGINT, SIGTERM, SIGHUP], first: @escaping @Sendable () -> Void,
    again: @escaping @Sendable () -> Void
  ) {
    self.signals = signals
    for number in signals {
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { [unowned self, source] in
        guard !finished else { return }
        // `data` counts the signals since the last call: two quick Ctrl-Cs arrive as one call.
        let before = count
        count += max(1, Int(source.data))
        if before == 0 {
          // The terminal or the reading end of a pipe may be gone (SIGHUP): a failed write must
          // not kill the process while it saves its progress.
          signal(SIGPIPE, SIG_IGN)
          first()
        }
        if count > 1 { again() }
      }
      sources.append(source)
    }
    // Until it returns a signal takes its default action (see above); after, it reaches a source.
    SignalRouting.start(sources, for: signals)
  }

  /// The work is done: later signals are caught but do nothing, so that the command reports
  /// how it ended and exits with that status.
  func finish() {
    queue.sync { finished = true }
  }

  /// Cancels the sources and restores the default dispositions (or leaves the signals ignored,
  /// see `ignoresSignalsAfterStop`).
  func stop() {
    queue.sync {
      SignalRouting.cancel(sources)
      sources.removeAll()
    }
    let disposition = Self.ignoresSignalsAfterStop.withLock { $0 } ? SIG_IGN : SIG_DFL
    for number in signals { signal(number, disposition) }
  }
}

/// The disposition a registered signal source needs so that a signal reaches it and nothing else.
enum SignalRouting {
  /// Linux: libdispatch's own handler for each signal, as it installs it with its first source
  /// of that signal in the process. It forwards a signal caught by a thread that does not block
  /// it (the main thread) to the thread that reads the source's `signalfd`. libdispatch installs
  /// it only once per process, so a later handler, after `stop()` reset the disposition, puts
  /// it back from here.
  private static let forwarding = Locked<[Int32: sigaction]>([:])

  /// How long `start` waits for the system to register a source: a safety bound, never reached
  /// (registration is one `signalfd` and `epoll_ctl` on libdispatch's manager thread).
  private static let registrationLimit = DispatchTimeInterval.seconds(5)

  /// Resumes `sources` (one for each of `signals`, their event handlers set) and returns once
  /// the system has registered them, each signal routed to its source. Never `SIG_IGN` before:
  /// on Linux that discards a pending signal and, until registration, those the main thread
  /// takes.
  static func start(_ sources: [any DispatchSourceSignal], for signals: [Int32]) {
    let registered = DispatchGroup()
    for source in sources {
      registered.enter()
      source.setRegistrationHandler { registered.leave() }
      source.resume()
    }
    _ = registered.wait(timeout: .now() + registrationLimit)
    for number in signals { route(number) }
  }

  /// Cancels `sources`, then clears their event handlers (each holds its source). In that order:
  /// libdispatch logs a deprecated use (to syslog) when a live source's handler is cleared.
  static func cancel(_ sources: [any DispatchSourceSignal]) {
    for source in sources {
      source.cancel()
      source.setEventHandler(handler: nil)
    }
  }

  /// Called once the source of `number` is registered.
  private static func route(_ number: Int32) {
    #if canImport(Glibc)
      var current = sigaction()
      sigaction(number, nil, &current)
      // SIG_DFL is a null pointer, SIG_IGN is 1: anything else is libdispatch's handler.
      if unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) > 1 {
        forwarding.withLock { $0[number] = current }
        return
      }
      if var known = forwarding.withLock({ $0[number] }) {
        sigaction(number, &known, nil)
        return
      }
    #endif
    // Darwin's kqueue sees a signal that is ignored, and ignoring it keeps its default action
    // from killing the process. On Linux only when a source made elsewhere in this process
    // (the manager's UI) had libdispatch install its handler: ignored, a signal the main thread
    // takes is then lost, as it was for every handler before this routing.
    signal(number, SIG_IGN)
  }
}
