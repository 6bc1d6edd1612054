import FoundationEssentials
import Haul
import HaulDaemon

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul daemon`: the manager in the foreground behind aria2's JSON-RPC, until SIGINT, SIGTERM
/// or `aria2.shutdown`.
enum DaemonCommand {
  static func run(
    _ arguments: [String], sink: OutputSink,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) async -> Int32 {
    let options: DaemonOptions
    do throws(UsageError) {
      options = try DaemonOptions.parse(arguments)
    } catch {
      sink.stderr("haul: \(error.message)\nTry 'haul daemon --help'.\n")
      return ExitStatus.usage
    }
    if options.help {
      sink.stdout(DaemonOptions.helpText)
      return ExitStatus.success
    }
    // Signals are caught from before the start: one that comes while the catalog opens stops
    // the daemon as soon as it runs, instead of killing it half-started.
    let stopper = Stopper()
    let interrupts = InterruptHandler(
      first: { stopper.request() },
      again: {
        // A second signal: leave now; the catalog and every download's bytes are already on disk.
        exit(ExitStatus.interrupted)
      })
    defer { interrupts.stop() }
    let daemon: Daemon
    let control: ControlServer
    do throws(HaulError) {
      let location = try CatalogLocation.resolve(options.catalog, environment: environment)
      let configuration = try configuration(options, location: location)
      try ControlSocket.refuseForeign(location.controlSocket)
      daemon = try await Daemon.start(configuration)
      // `haul add`, `pause`, `resume` and `rm` from another shell act through the daemon, on its
      // catalog's control socket, as they do through `haul run`; aria2's methods are there too.
      let aria2 = Aria2Methods(manager: daemon.manager, directory: configuration.directory) { [daemon] _ in
        daemon.requestShutdown()
      }
      do throws(HaulError) {
        control = try ControlServer.start(location, manager: daemon.manager, more: aria2.methods)
      } catch {
        await daemon.stop()
        throw error
      }
    } catch {
      return HaulCommand.setupFailure(error, json: false, sink: sink)
    }
    let log = DaemonLog(sink: sink, quiet: options.quiet)
    log.started(daemon)
    stopper.attach(daemon)
    let events = daemon.manager.events()
    let printer = Task { for await event in events { log.print(event, manager: daemon.manager) } }
    await daemon.waitForShutdownRequest()
    log.stopping()
    control.stop()
    await daemon.stop()
    printer.cancel()
    return ExitStatus.success
  }

  static func configuration(_ options: DaemonOptions, location: CatalogLocation) throws(HaulError)
    -> Daemon.Configuration
  {
    try location.prepareDirectory()
    let catalog = URL(fileURLWithPath: location.path)
    let secretFile = catalog.deletingLastPathComponent().appendingPathComponent("rpc-secret").path
    let secret: RPCSecret.Source =
      options.secret.map { .given($0) } ?? options.secretFile.map { .file($0) }
      ?? .generated(path: secretFile)
    try UserFiles.requireWritableDirectory(options.directory)
    var configuration = Daemon.Configuration(
      catalog: catalog, directory: URL(fileURLWithPath: options.directory).standardizedFileURL.path,
      secret: secret)
    configuration.server.port = options.port
    configuration.server.listenOnAllAddresses = options.listenAll
    configuration.server.allowAnyOrigin = options.allowOriginAll
    configuration.server.allowedHosts = Set(options.allowedHosts)
    configuration.server.maximumRequestSize = options.maximumRequestSize
    if let limit = options.maxConcurrentDownloads { configuration.manager.maxConcurrentDownloads = limit }
    configuration.manager.overallRateLimit = options.overallLimit
    return configuration
  }
}

/// Where a signal's request to stop goes: the daemon once it runs, until then a flag it reads
/// when attached.
private final class Stopper: Sendable {
  private let state = Locked((daemon: Daemon?.none, requested: false))

  func request() {
    let daemon = state.withLock { state in
      state.requested = true
      return state.daemon
    }
    daemon?.requestShutdown()
  }

  func attach(_ daemon: Daemon) {
    let requested = state.withLock { state in
      state.daemon = daemon
      return state.requested
    }
    if requested { daemon.requestShutdown() }
  }
}
