import Dispatch
import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `haul` command: parses arguments, runs the download, reports, and returns the exit status.
enum HaulCommand {
  static func run(arguments: [String], sink: OutputSink = .standard) async -> Int32 {
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
      sink.stdout("haul \(Haul.version)\n")
      return ExitStatus.success
    case .download(let options) where options.isBatch:
      return await BatchDownload.run(options, sink: sink)
    case .download(let options):
      return await download(options, sink: sink)
    }
  }

  static func usageErrorText(_ error: UsageError) -> String {
    "haul: \(error.message)\nTry 'haul --help'.\n"
  }

  static func reporterStyle(for options: CommandLineOptions, stderrIsTerminal: Bool) -> Reporter.Style {
    if options.json { return .json }
    if options.quiet { return .quiet }
    return stderrIsTerminal ? .terminal : .plain
  }

  static func destination(for options: CommandLineOptions) -> DownloadDestination {
    if let output = options.output { return .file(URL(fileURLWithPath: output)) }
    return .directory(URL(fileURLWithPath: options.directory ?? ".", isDirectory: true))
  }

  private static func download(_ options: CommandLineOptions, sink: OutputSink) async -> Int32 {
    if options.insecure {
      sink.stderr("haul: warning: --insecure: TLS certificates and host names are not checked\n")
    }
    let clockStart = ContinuousClock.now
    let style = reporterStyle(for: options, stderrIsTerminal: Terminal.stderrIsTerminal)
    var reporter = Reporter(
      style: style, sink: sink,
      now: { (ContinuousClock.now - clockStart) / .seconds(1) },
      width: { Terminal.stderrWidth() })

    let download: Download
    do throws(HaulError) {
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

    let consumer = Task { [reporter] in
      var reporter = reporter
      for await event in download.events { reporter.handle(event) }
    }
    let status = await ExitStatus.run(download)
    await consumer.value
    return status
  }
}

/// SIGINT and SIGTERM while a download runs: the first stops it (keeping the partial file),
/// a second one exits at once.
final class InterruptHandler: @unchecked Sendable {
  private let queue = DispatchQueue(label: "haul.signals")
  private let signals: [Int32]
  // Touched only on `queue` (event handlers) and in `stop()` after cancelling them.
  private var sources: [any DispatchSourceSignal] = []
  private var count = 0

  init(
    signals: [Int32] = [SIGINT, SIGTERM], first: @escaping @Sendable () -> Void,
    again: @escaping @Sendable () -> Void
  ) {
    self.signals = signals
    for number in signals {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { [unowned self, source] in
        // `data` counts the signals since the last call: two quick Ctrl-Cs arrive as one call.
        let before = count
        count += max(1, Int(source.data))
        if before == 0 { first() }
        if count > 1 { again() }
      }
      source.resume()
      sources.append(source)
    }
  }

  /// Cancels the sources and restores the default dispositions.
  func stop() {
    queue.sync {
      for source in sources {
        source.setEventHandler(handler: nil)  // It holds the source.
        source.cancel()
      }
      sources.removeAll()
    }
    for number in signals { signal(number, SIG_DFL) }
  }
}
