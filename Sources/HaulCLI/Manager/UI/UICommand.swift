import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul ui`: owns the catalog like `haul run` (and serves the other subcommands on its control
/// socket), runs its downloads, and shows them full-screen: a row per download with a bar, speed,
/// ETA and state, keys to move, pause, resume, cancel, remove, add a URL, change how many run
/// at once and the rate limits. q leaves with everything saved; so do Ctrl-C, SIGTERM and SIGHUP
/// (exit 130). Ctrl-Z (or SIGTSTP) gives the terminal back and stops the process; `fg` takes it
/// again and redraws. The terminal is put back as it was on every way out.
///
/// When another process owns the catalog (`haul run`, another `haul ui`, `haul daemon`), it
/// attaches to that process through its control socket instead (`UIOwnerBackend`): the same
/// screen shows the owner's downloads live and the keys act in the owner; `-j` and
/// `--limit-rate`, when given, change the owner's limits. Leaving leaves the owner running. When
/// the owner goes (it finished, or was stopped), the view ends: the terminal is put back and it
/// says so, exit 1; `haul ui` again then owns the catalog itself.
///
/// One task runs the loop and owns the screen state; inputs (keys, resizes, signals, ticks, what
/// the backend answered) arrive on one stream (`UIInputs`), and the backend's calls run on a
/// task of their own (`UIWorker`), so that keys and signals are answered while an owner is slow.
enum UICommand {
  static let subcommand = ManagerCommand.Subcommand(
    name: "ui", arguments: "[-j N] [--limit-rate RATE] [-d DIR] [--catalog FILE]",
    summary: """
      A full-screen view of the catalog that runs its downloads, N at a time: a row per download
      with a progress bar, speed, ETA and state. Keys: up/down or j/k select, p pause, r resume,
      c cancel, d or Delete remove (asks first; files stay), + add a URL (into DIR, default .),
      < and > run fewer or more at once, l limit the selected download's rate and L all
      downloads' together (500K, 2M; 0 lifts it), Ctrl-Z suspend (fg comes back), q quit. Everything
      stays saved: haul ui or haul run again continues. While it runs, haul add, pause, resume
      and rm change what it does. When haul run, another haul ui or haul daemon owns the
      catalog, it shows that process's downloads and its keys act there (-j and --limit-rate
      change its limits); quitting leaves that process running.
      """,
    specs: ManagerCommand.table(["parallel", "limit-rate", "dir", "help"]) + [ManagerCommand.catalogOption],
    run: { arguments, context in await run(arguments, context) })

  static let tick = Duration.milliseconds(500)

  /// How `haul ui` reaches the catalog.
  enum Access {
    /// It owns the catalog and runs its downloads.
    case owning(CatalogOwner)
    /// Another process owns it: through that process's control socket.
    case attached(ControlClient)

    var backend: any UIBackend {
      switch self {
      case .owning(let owner): UILocalBackend(manager: owner.manager)
      case .attached(let client): UIOwnerBackend(client: client)
      }
    }

    func close() async {
      switch self {
      case .owning(let owner): await owner.close()
      case .attached(let client): client.hangUp()
      }
    }
  }

  static func run(_ arguments: ManagerCommand.ParsedArguments, _ context: ManagerCommand.Context) async
    -> Int32
  {
    let sink = context.sink
    guard arguments.positionals.isEmpty else {
      return ManagerCommand.usageError(
        "ui", "takes no URLs (got '\(arguments.positionals[0])'); press + in it, or haul add", sink: sink)
    }
    let options = arguments.options
    // Absolute: an owner in another directory puts what is added here where it was meant to go.
    let directory = absoluteDirectory(options.directory ?? ".")
    let inputs = UIInputs()
    let location: CatalogLocation
    let access: Access
    do throws(HaulError) {
      try UITerminal.requireTerminal()
      location = try ManagerCommand.location(arguments, context)
      try location.prepareDirectory()
      access = try await open(location, options: options, directory: directory.path) {
        // aria2.shutdown on the control socket: as SIGTERM.
        inputs.requestStop()
      }
    } catch {
      return ManagerCommand.failure(error, "ui", sink: sink)
    }
    let backend = access.backend
    let first: UISnapshot
    let terminal: UITerminal
    do throws(HaulError) {
      if case .attached = access, options.parallel != nil || options.rateLimit != nil {
        try await backend.setLimits(maxConcurrent: options.parallel, overallRateLimit: options.rateLimit)
      }
      if case .attached = access, options.rateLimitGiven, options.rateLimit == nil {
        // `--limit-rate 0`: the owner's limit is lifted, as the ui's `L 0` lifts it.
        try await backend.setOverallRateLimit(nil)
      }
      first = try await backend.snapshot()
      terminal = try UITerminal.enter()
    } catch {
      await access.close()
      return ManagerCommand.failure(error, "ui", sink: sink)
    }
    inputs.start(tick: tick)
    var session = UISession(
      backend: backend, terminal: terminal, catalog: location.shown, directory: directory, snapshot: first,
      deliver: { inputs.deliver($0) })
    let outcome = await session.loop(inputs.stream)
    await session.finish()
    inputs.stop()
    terminal.restore()
    await access.close()
    switch outcome {
    case .quit: return ExitStatus.success
    case .interrupted: return ExitStatus.interrupted
    case .failed(let error): return ManagerCommand.failure(error, "ui", sink: sink)
    }
  }

  /// The owner when one answers on the control socket; else this process as the owner; else
  /// (the catalog is in use by a process that is about to serve it) that process, once it does.
  /// - Throws: `HaulError`: the catalog is refused, or another process owns it and serves
  ///   nothing (a program using the library), or the control socket's name is taken.
  static func open(
    _ location: CatalogLocation, options: CommandLineOptions, directory: String,
    onShutdown: @escaping @Sendable () -> Void
  ) async throws(HaulError) -> Access {
    if let client = ControlClient.connect(location) { return .attached(client) }
    do throws(HaulError) {
      return .owning(
        try await CatalogOwner.open(location, options: options, directory: directory) { _ in onShutdown() })
    } catch {
      guard error.category == .generic,
        let client = ControlClient.connect(location, waitingUpTo: CatalogAccess.ownerStartup)
      else { throw error }
      return .attached(client)
    }
  }

  static func absoluteDirectory(_ path: String) -> URL {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    return URL(fileURLWithPath: absolute, isDirectory: true).standardizedFileURL
  }
}

/// The loop of `haul ui`: the screen state, the last frame drawn, and the commands it hands the
/// worker.
struct UISession {
  let backend: any UIBackend
  let terminal: UITerminal
  let catalog: String
  let directory: URL
  private let worker: UIWorker
  private var snapshot: UISnapshot
  private var state = UIState()
  private var decoder = UIKeyDecoder()
  private var drawn: [String]?
  private var size: TerminalSize
  /// Set when this process stopped itself (Ctrl-Z): the SIGCONT that follows is expected.
  private var continuing = false

  /// How the loop ended.
  enum Outcome {
    /// q.
    case quit
    /// Ctrl-C, a stop signal, the terminal gone.
    case interrupted
    /// The backend cannot answer any more (the owner has gone).
    case failed(HaulError)
  }

  /// How long a call may be outstanding before the view says that it waits for the owner.
  static let patience = ControlClient.patience

  init(
    backend: any UIBackend, terminal: UITerminal, catalog: String, directory: URL, snapshot: UISnapshot,
    deliver: @escaping @Sendable (UIInput) -> Void
  ) {
    self.backend = backend
    self.terminal = terminal
    self.catalog = catalog
    self.directory = directory
    self.snapshot = snapshot
    worker = UIWorker(backend: backend, directory: directory, deliver: deliver)
    size = terminal.size
  }

  /// Runs until quit, a stop, or the backend failing.
  mutating func loop(_ inputs: AsyncStream<UIInput>) async -> Outcome {
    draw()
    for await input in inputs {
      switch input {
      case .bytes(let bytes):
        for key in decoder.feed(bytes) {
          let rows = snapshot.items.map(\.row)
          for command in state.handle(key, rows: rows, visibleRows: UIScreen(size: size).visibleRows) {
            switch command {
            case .quit(let interrupted): return interrupted ? .interrupted : .quit
            case .suspend: suspend()
            default: worker.perform(command, name: name(of: command))
            }
          }
        }
      case .resized:
        size = terminal.size
        drawn = nil
      case .suspend: suspend()
      case .continued:
        // Stopped by another process (SIGSTOP), or by Ctrl-Z here: redrawn already.
        if continuing {
          continuing = false
        } else {
          terminal.retake()
          size = terminal.size
          drawn = nil
        }
      case .tick: worker.refresh()
      case .refreshed(.success(let taken)): snapshot = taken
      case .refreshed(.failure(let error)): return .failed(backend.isGone ? gone : error)
      case .performed(let message):
        state.report(message)
        worker.refresh()
      case .stop, .inputEnded: return .interrupted
      }
      draw()
    }
    return .interrupted
  }

  /// Waits for the commands handed to the worker (a key pressed just before q is carried out),
  /// at most a few seconds: an owner that does not answer is not waited for.
  func finish() async {
    await worker.finish(waitingUpTo: 10)
  }

  /// Ctrl-Z or SIGTSTP: the terminal goes back to the shell while stopped; after fg, a full
  /// redraw at the terminal's size then.
  private mutating func suspend() {
    guard terminal.suspend() else { return }
    continuing = true
    size = terminal.size
    drawn = nil
  }

  /// The owner closed the connection: it stopped serving the catalog, or its process ended.
  private var gone: HaulError {
    let owner = backend.ownerProcess.map { "process \($0), which owned the catalog \(catalog)," }
    return HaulError(
      .generic,
      (owner ?? "the process that owned the catalog \(catalog)")
        + " has gone: this view of its downloads ends with it",
      hint: "run haul ui again to run the catalog's downloads here (or to attach to its next owner)")
  }

  /// The name of the download a command is about, for its message.
  private func name(of command: UIState.Command) -> String {
    let id: DownloadID
    switch command {
    case .pause(let given), .resume(let given), .cancel(let given), .remove(let given),
      .limitRate(let given, _):
      id = given
    default: return ""
    }
    return snapshot.items.first { $0.id == id }?.name ?? id.description
  }

  private mutating func draw() {
    let items = snapshot.items
    let screen = UIScreen(size: size)
    state.fit(rows: items.map(\.row), visibleRows: screen.visibleRows)
    var notice: String?
    if let since = worker.busySince, ContinuousClock.now - since > Self.patience {
      let process = backend.ownerProcess.map { "process \($0)" } ?? "the process"
      notice = "waiting for \(process), which owns the catalog, to answer (is it stopped?)"
    }
    let summary = UIScreen.Summary(
      catalog: catalog, active: snapshot.active, bytesPerSecond: snapshot.bytesPerSecond,
      maxConcurrent: snapshot.maxConcurrent, overallRateLimit: snapshot.overallRateLimit,
      owner: backend.ownerProcess, notice: notice)
    let lines = screen.lines(items: items, state: state, summary: summary)
    let update = UIScreen.update(from: drawn, to: lines)
    if !update.isEmpty { terminal.write(update) }
    drawn = lines
  }
}

/// Carries out `haul ui`'s calls on its backend one at a time, in order, on a task of its own,
/// so that the view answers keys and signals while an owner takes its time (or is stopped);
/// each outcome comes back to the loop as an input. Refreshes asked for while one waits are one.
final class UIWorker: Sendable {
  enum Job: Sendable {
    case refresh
    case command(UIState.Command, name: String)
  }

  private struct State {
    var refreshQueued = false
    /// Commands handed in and not carried out yet.
    var commands = 0
    /// When the call under way started.
    var busySince: ContinuousClock.Instant?
    var finishing = false
  }

  private let jobs: AsyncStream<Job>.Continuation
  private let state = Locked(State())

  init(backend: any UIBackend, directory: URL, deliver: @escaping @Sendable (UIInput) -> Void) {
    let (stream, continuation) = AsyncStream<Job>.makeStream(bufferingPolicy: .unbounded)
    jobs = continuation
    Task { [state] in
      for await job in stream {
        state.withLock { $0.busySince = .now }
        switch job {
        case .refresh:
          let skipped = state.withLock { state in
            state.refreshQueued = false
            return state.finishing
          }
          if !skipped {
            do throws(HaulError) {
              deliver(.refreshed(.success(try await backend.snapshot())))
            } catch {
              deliver(.refreshed(.failure(error)))
            }
          }
        case .command(let command, let name):
          deliver(.performed(await Self.perform(command, name: name, on: backend, directory: directory)))
          state.withLock { $0.commands -= 1 }
        }
        state.withLock { $0.busySince = nil }
      }
    }
  }

  /// When the call under way started; nil when none is.
  var busySince: ContinuousClock.Instant? { state.withLock { $0.busySince } }

  /// Asks for a new snapshot (once, however often asked before it is taken).
  func refresh() {
    let wanted = state.withLock { state in
      guard !state.refreshQueued, !state.finishing else { return false }
      state.refreshQueued = true
      return true
    }
    if wanted { jobs.yield(.refresh) }
  }

  func perform(_ command: UIState.Command, name: String) {
    state.withLock { $0.commands += 1 }
    jobs.yield(.command(command, name: name))
  }

  /// Takes no more jobs and waits until the commands handed in are carried out, at most `seconds`.
  func finish(waitingUpTo seconds: Double) async {
    state.withLock { $0.finishing = true }
    jobs.finish()
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while state.withLock({ $0.commands > 0 }), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
  }

  /// Carries out `command`; what the view says about it.
  static func perform(
    _ command: UIState.Command, name: String, on backend: any UIBackend, directory: URL
  ) async -> String {
    do throws(HaulError) {
      switch command {
      case .pause(let id):
        try await backend.pause(id)
        return "paused \(name)"
      case .resume(let id):
        try await backend.resume(id)
        return "resumed \(name)"
      case .cancel(let id):
        try await backend.cancel(id)
        return "cancelled \(name) (r resumes it)"
      case .remove(let id):
        try await backend.remove(id)
        return "removed \(name); its files stay"
      case .add(let url):
        let id = try await backend.add(DownloadRequest(url: url, to: .directory(directory)))
        return "added \(id)"
      case .changeConcurrency(let delta):
        let limit = try await backend.limits().maxConcurrent
        let wanted = min(64, max(1, limit + delta))
        try await backend.setLimits(maxConcurrent: wanted, overallRateLimit: nil)
        return "\(wanted) at a time"
      case .limitRate(let id, let rate):
        try await backend.setRateLimit(rate, of: id)
        return rate.map { "\(name) limited to " + ByteQuantity.formatRate(Double($0)) }
          ?? "\(name): rate limit lifted"
      case .limitOverallRate(let rate):
        try await backend.setOverallRateLimit(rate)
        return rate.map { "all downloads limited to " + ByteQuantity.formatRate(Double($0)) + " together" }
          ?? "overall rate limit lifted"
      case .quit, .suspend: return ""
      }
    } catch {
      return error.message + (error.hint.map { " (\($0))" } ?? "")
    }
  }
}
