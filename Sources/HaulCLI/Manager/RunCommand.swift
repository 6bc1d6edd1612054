import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul run [-j N]`: owns the catalog and runs every queued (and interrupted) download in the
/// foreground with the batch display, until none is left to run; paused ones stay paused.
/// Ctrl-C, SIGTERM or SIGHUP stop the running ones with their bytes saved (they stay queued),
/// and it exits 130; running it again continues them.
enum RunCommand {
  static let subcommand = ManagerCommand.Subcommand(
    name: "run", arguments: "[-j N] [--limit-rate RATE] [--catalog FILE]",
    summary: """
      Runs the catalog's queued downloads (and those a killed run left), N at a time, with a
      line per running download, until none is left to run; paused ones stay paused. Exits
      with the status of the first download that failed, else 0. Ctrl-C, SIGTERM or SIGHUP stop
      them with every byte kept (exit 130): haul run again continues them. While it runs,
      haul add, pause, resume and rm change what it does.
      """,
    specs: ManagerCommand.table(["parallel", "limit-rate", "quiet", "json", "help"]) + [
      ManagerCommand.catalogOption
    ],
    run: { arguments, context in await run(arguments, context) })

  static func run(_ arguments: ManagerCommand.ParsedArguments, _ context: ManagerCommand.Context) async
    -> Int32
  {
    let sink = context.sink
    guard arguments.positionals.isEmpty else {
      return ManagerCommand.usageError(
        "run", "takes no URLs (got '\(arguments.positionals[0])'); haul add queues them", sink: sink)
    }
    let options = arguments.options
    let location: CatalogLocation
    let owner: CatalogOwner
    let stop = StopRequest()
    do throws(HaulError) {
      location = try ManagerCommand.location(arguments, context)
      // lstat: a dangling link is refused when opened, as every subcommand refuses one.
      guard location.exists else {
        if !options.quiet, !options.json {
          sink.stderr(
            "haul: nothing to run: there is no catalog at \(location.shown) (haul add queues downloads)\n")
        }
        return ExitStatus.success
      }
      owner = try await CatalogOwner.open(
        location, options: options, directory: FileManager.default.currentDirectoryPath
      ) { manager in
        // aria2.shutdown on the control socket: as SIGTERM.
        stop.request()
        Task { await manager.close() }
      }
    } catch {
      return ManagerCommand.failure(error, "run", sink: sink)
    }
    let manager = owner.manager
    let events = manager.events()
    let style = HaulCommand.reporterStyle(for: options, stderrIsTerminal: Terminal.stderrIsTerminal)
    let clockStart = ContinuousClock.now
    let reporter = BatchReporter(
      style: style, sink: sink, urls: [], now: { (ContinuousClock.now - clockStart) / .seconds(1) },
      width: { Terminal.stderrWidth() }, height: { Terminal.stderrHeight() })
    let display = RunDisplay(reporter: reporter, json: options.json, sink: sink) { id in
      guard let download = manager.download(id) else { return (id.description, nil) }
      return (download.url, download.file?.lastPathComponent ?? ListTable.name(of: download))
    }
    let inputs = DisplayInput.merging(events, tickEvery: style == .terminal ? Reporter.tickInterval : nil)
    let consumer = Task {
      var display = display
      for await input in inputs {
        switch input {
        case .event(let event): display.handle(event)
        case .tick: display.tick()
        }
      }
      return display
    }
    let interrupts = InterruptHandler(
      first: {
        stop.request()
        Task { await owner.close() }
      },
      again: {
        // A second signal: leave now; every download's last checkpoint is on disk.
        sink.stderr(style == .terminal ? "\n" : "")
        exit(ExitStatus.interrupted)
      })
    defer { interrupts.stop() }
    if !options.quiet, !options.json {
      let waiting = manager.snapshot().downloads.filter { $0.state == .queued || $0.state == .active }.count
      if waiting == 0 { sink.stderr("haul: nothing to run in \(location.shown)\n") }
    }
    await manager.waitUntilIdle()
    await owner.close()
    // What an interrupted run left queued (a closed manager still lists its downloads).
    let waiting = manager.snapshot().downloads.filter { $0.state == .queued }.map(\.id)
    var finished = await consumer.value
    return finished.finish(interrupted: stop.isRequested, waiting: waiting)
  }
}

/// Set once a stop signal arrived (read by the task that ends the run).
final class StopRequest: Sendable {
  private let flag = Locked(false)
  func request() { flag.withLock { $0 = true } }
  var isRequested: Bool { flag.withLock { $0 } }
}
