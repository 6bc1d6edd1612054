import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul ui`: owns the catalog like `haul run` (and serves the other subcommands on its control
/// socket), runs its downloads, and shows them full-screen: a row per download with a bar, speed,
/// ETA and state, keys to move, pause, resume, cancel, remove, add a URL and change how many run
/// at once. q leaves with everything saved; so do Ctrl-C, SIGTERM and SIGHUP (exit 130). The
/// terminal is put back as it was on every way out.
///
/// One task runs the loop and owns the screen state; inputs (keys, resizes, signals, ticks)
/// arrive on one stream (`UIInputs`).
enum UICommand {
  static let subcommand = ManagerCommand.Subcommand(
    name: "ui", arguments: "[-j N] [--limit-rate RATE] [-d DIR] [--catalog FILE]",
    summary: """
      A full-screen view of the catalog that runs its downloads, N at a time: a row per download
      with a progress bar, speed, ETA and state. Keys: up/down or j/k select, p pause, r resume,
      c cancel, d or Delete remove (asks first; files stay), + add a URL (into DIR, default .),
      < and > run fewer or more at once, q quit. Everything stays saved: haul ui or haul run
      again continues. While it runs, haul add, pause, resume and rm change what it does.
      """,
    specs: ManagerCommand.table(["parallel", "limit-rate", "dir", "help"]) + [ManagerCommand.catalogOption],
    run: { arguments, context in await run(arguments, context) })

  static let tick = Duration.milliseconds(500)

  static func run(_ arguments: ManagerCommand.ParsedArguments, _ context: ManagerCommand.Context) async
    -> Int32
  {
    let sink = context.sink
    guard arguments.positionals.isEmpty else {
      return ManagerCommand.usageError(
        "ui", "takes no URLs (got '\(arguments.positionals[0])'); press + in it, or haul add", sink: sink)
    }
    let options = arguments.options
    let directory = URL(fileURLWithPath: options.directory ?? ".", isDirectory: true)
    let inputs = UIInputs()
    let location: CatalogLocation
    let owner: CatalogOwner
    let terminal: UITerminal
    do throws(HaulError) {
      try UITerminal.requireTerminal()
      location = try ManagerCommand.location(arguments, context)
      try location.prepareDirectory()
      owner = try await CatalogOwner.open(location, options: options, directory: directory.path) { _ in
        // aria2.shutdown on the control socket: as SIGTERM.
        inputs.requestStop()
      }
    } catch {
      return ManagerCommand.failure(error, "ui", sink: sink)
    }
    do throws(HaulError) {
      terminal = try UITerminal.enter()
    } catch {
      await owner.close()
      return ManagerCommand.failure(error, "ui", sink: sink)
    }
    inputs.start(tick: tick)
    var session = UISession(
      manager: owner.manager, terminal: terminal, catalog: location.shown, directory: directory)
    let interrupted = await session.loop(inputs.stream)
    inputs.stop()
    terminal.restore()
    await owner.close()
    return interrupted ? ExitStatus.interrupted : ExitStatus.success
  }
}

/// The loop of `haul ui`: the screen state, the last frame drawn, and the commands it runs.
struct UISession {
  let manager: DownloadManager
  let terminal: UITerminal
  let catalog: String
  let directory: URL
  private var state = UIState()
  private var decoder = UIKeyDecoder()
  private var drawn: [String]?
  private var size: TerminalSize

  init(manager: DownloadManager, terminal: UITerminal, catalog: String, directory: URL) {
    self.manager = manager
    self.terminal = terminal
    self.catalog = catalog
    self.directory = directory
    size = terminal.size
  }

  /// Runs until quit; true when it was stopped by Ctrl-C or a signal.
  mutating func loop(_ inputs: AsyncStream<UIInput>) async -> Bool {
    draw()
    for await input in inputs {
      switch input {
      case .bytes(let bytes):
        for key in decoder.feed(bytes) {
          let items = self.items()
          let screen = UIScreen(size: size)
          for command in state.handle(key, rows: items.map(\.row), visibleRows: screen.visibleRows) {
            if case .quit(let interrupted) = command { return interrupted }
            await perform(command, items: items)
          }
        }
      case .resized:
        size = terminal.size
        drawn = nil
      case .tick: break
      case .stop, .inputEnded: return true
      }
      draw()
    }
    return true
  }

  /// Every download but those removed, in queue order.
  private func items() -> [UIScreen.Item] {
    manager.downloads().filter { $0.state != .removed }.map(UIScreen.Item.init)
  }

  private mutating func draw() {
    let snapshot = manager.snapshot()
    let items = snapshot.downloads.filter { $0.state != .removed }.map(UIScreen.Item.init)
    let screen = UIScreen(size: size)
    state.fit(rows: items.map(\.row), visibleRows: screen.visibleRows)
    let statistics = snapshot.statistics
    let summary = UIScreen.Summary(
      catalog: catalog, active: statistics.active, bytesPerSecond: statistics.bytesPerSecond,
      maxConcurrent: statistics.maxConcurrentDownloads)
    let lines = screen.lines(items: items, state: state, summary: summary)
    let update = UIScreen.update(from: drawn, to: lines)
    if !update.isEmpty { terminal.write(update) }
    drawn = lines
  }

  private mutating func perform(_ command: UIState.Command, items: [UIScreen.Item]) async {
    func name(_ id: DownloadID) -> String { items.first { $0.id == id }?.name ?? id.description }
    do throws(HaulError) {
      switch command {
      case .pause(let id):
        try await manager.pause(id)
        state.report("paused \(name(id))")
      case .resume(let id):
        try await manager.resume(id)
        state.report("resumed \(name(id))")
      case .cancel(let id):
        try await manager.cancel(id)
        state.report("cancelled \(name(id)) (r resumes it)")
      case .remove(let id):
        try await manager.remove(id)
        state.report("removed \(name(id)); its files stay")
      case .add(let url):
        let ids = try await manager.add([DownloadRequest(url: url, to: .directory(directory))])
        state.report("added \(ids.first?.description ?? url)")
      case .changeConcurrency(let delta):
        let limit = manager.snapshot().statistics.maxConcurrentDownloads
        let wanted = min(64, max(1, limit + delta))
        try await manager.setMaxConcurrentDownloads(wanted)
        state.report("\(wanted) at a time")
      case .quit: break
      }
    } catch {
      state.report(error.message + (error.hint.map { " (\($0))" } ?? ""))
    }
  }
}
