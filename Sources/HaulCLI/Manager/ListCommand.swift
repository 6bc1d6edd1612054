import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul ls [--json]`: every download of the catalog, without the network and without opening
/// the catalog for changes (`DownloadManager.read`), so it works while another process runs
/// them. One download is in memory at a time, whatever the catalog's length.
enum ListCommand {
  static let subcommand = ManagerCommand.Subcommand(
    name: "ls", arguments: "[--json] [--catalog FILE | --queue URL]",
    summary: """
      Lists the catalog's downloads in queue order: id, state, how much is done, size, speed and
      name, fitted to the terminal. Needs no network, and works while haul run, haul ui or the
      daemon has the catalog open (running downloads show what it last recorded, a few times a
      second, and the speed it measures now; without it, no speed; with --queue, a worker's speed
      while its last report is under \(Int(FleetJob.speedLifetime)) s old). --json prints one object per line: id, state,
      bytes, total, fraction, bytes_per_second, rate_limit, file, url, error, error_category,
      hint, queue_index, needs_credentials, sha256, added_at, finished_at.
      """,
    specs: ManagerCommand.table(["json", "help"]) + [
      ManagerCommand.catalogOption, ManagerCommand.queueOption,
    ],
    run: { arguments, context in await run(arguments, context) })

  static func run(_ arguments: ManagerCommand.ParsedArguments, _ context: ManagerCommand.Context) async
    -> Int32
  {
    let sink = context.sink
    guard arguments.positionals.isEmpty else {
      return ManagerCommand.usageError(
        "ls", "takes no arguments (got '\(arguments.positionals[0])')", sink: sink)
    }
    let json = arguments.options.json
    let width = isatty(STDOUT_FILENO) == 1 ? TerminalSize.of(STDOUT_FILENO)?.columns ?? 80 : nil
    if let queue = ManagerCommand.queue(arguments, context) {
      return await QueueCommands.list(queue: queue, json: json, width: width, sink: sink)
    }
    let location: CatalogLocation
    do throws(HaulError) {
      location = try ManagerCommand.location(arguments, context)
      if location.isDefault, !location.exists {
        // A fresh machine: no catalog yet means no downloads, not a mistyped --catalog.
        if !json { sink.stderr("haul: no downloads yet (haul add makes the catalog, \(location.shown))\n") }
        return ExitStatus.success
      }
      try location.requireExisting()
    } catch {
      return ManagerCommand.failure(error, "ls", sink: sink)
    }
    let table = ListTable(width: width)
    // The catalog keeps no speed: the owner, if one runs, tells its running downloads'.
    let speeds = await LiveSpeeds.fetch(location)
    var output = BufferedOutput(sink: sink)
    var count = 0
    do throws(HaulError) {
      try DownloadManager.read(catalog: URL(fileURLWithPath: location.path)) { download in
        if json {
          output.append(ListTable.json(download, speed: speeds[download.id]) + "\n")
        } else {
          if count == 0 { output.append(table.header + "\n") }
          output.append(table.row(download, speed: speeds[download.id]) + "\n")
        }
        count += 1
      }
    } catch {
      output.flush()
      return ManagerCommand.failure(error, "ls", sink: sink)
    }
    output.flush()
    if count == 0, !json { sink.stderr("haul: no downloads in \(location.shown)\n") }
    return ExitStatus.success
  }
}

/// Text for standard output, written in large pieces (10,000 lines are not 10,000 writes).
struct BufferedOutput {
  let sink: OutputSink
  private var pending = ""
  static let chunk = 64 << 10

  init(sink: OutputSink) { self.sink = sink }

  mutating func append(_ text: String) {
    pending += text
    if pending.utf8.count >= Self.chunk { flush() }
  }

  mutating func flush() {
    guard !pending.isEmpty else { return }
    sink.stdout(pending)
    pending = ""
  }
}

/// A terminal's size in columns and rows.
struct TerminalSize: Equatable, Sendable {
  var columns: Int
  var rows: Int

  /// The size of the terminal on `descriptor`, or nil when it is not one (or says 0).
  static func of(_ descriptor: Int32) -> TerminalSize? {
    var size = winsize()
    #if canImport(Glibc)
      let request = UInt(TIOCGWINSZ)
    #else
      let request = TIOCGWINSZ
    #endif
    guard ioctl(descriptor, request, &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
    return TerminalSize(columns: Int(size.ws_col), rows: Int(size.ws_row))
  }
}
