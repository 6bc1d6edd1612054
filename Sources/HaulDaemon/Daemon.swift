import FoundationEssentials
import Haul
import HaulRPC

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul daemon`: a `DownloadManager` on a catalog, driven over aria2's JSON-RPC (HTTP and
/// WebSocket on one port), with aria2's notifications for every WebSocket client.
///
///     let daemon = try await Daemon.start(configuration)
///     await daemon.waitForShutdownRequest()   // aria2.shutdown, or stop() from a signal
///     await daemon.stop()
///
/// Threads: any.
package final class Daemon: Sendable {
  package struct Configuration: Sendable {
    package var catalog: URL
    /// Where downloads go unless a call's `dir` says otherwise.
    package var directory: String
    package var server = RPCServerConfiguration()
    package var manager = DownloadManager.Configuration()
    package var secret: RPCSecret.Source

    package init(catalog: URL, directory: String, secret: RPCSecret.Source) {
      self.catalog = catalog
      self.directory = directory
      self.secret = secret
    }
  }

  package let manager: DownloadManager
  package let server: RPCServer
  package let secret: RPCSecret.Loaded
  private let notifications: Task<Void, Never>
  private let shutdown: ShutdownSignal

  private init(
    manager: DownloadManager, server: RPCServer, secret: RPCSecret.Loaded, notifications: Task<Void, Never>,
    shutdown: ShutdownSignal
  ) {
    self.manager = manager
    self.server = server
    self.secret = secret
    self.notifications = notifications
    self.shutdown = shutdown
  }

  /// Opens the catalog (restoring every download without the network, resuming what ran),
  /// loads or makes the secret, and starts listening.
  ///
  /// - Throws: `HaulError` when the catalog is owned by another process or is not a catalog,
  ///   when the secret cannot be had, when the port cannot be listened on.
  package static func start(_ configuration: Configuration) async throws(HaulError) -> Daemon {
    var serverConfiguration = configuration.server
    serverConfiguration.maximumConnections = max(
      16, min(serverConfiguration.maximumConnections, raiseOpenFileLimit() - 256))
    let secret = try RPCSecret.load(configuration.secret)
    let manager = try DownloadManager(catalog: configuration.catalog, configuration: configuration.manager)
    let shutdown = ShutdownSignal()
    let facts = Aria2Methods.ServerFacts(
      port: serverConfiguration.port, listenAll: serverConfiguration.listenOnAllAddresses,
      allowOriginAll: serverConfiguration.allowAnyOrigin,
      maximumRequestSize: serverConfiguration.maximumRequestSize)
    let service = RPCService.aria2(
      manager: manager, secret: secret.secret, directory: configuration.directory, server: facts,
      shutdown: { _ in shutdown.request() })
    let server: RPCServer
    do throws(HaulError) {
      server = try await RPCServer.start(serverConfiguration, service: service)
    } catch {
      await manager.close()
      throw error
    }
    let events = manager.events()
    // Seeded after subscribing: the events since then carry each download on from here.
    let seed = manager.downloads()
    let notifications = Task {
      var notifier = Aria2Notifier(seed)
      for await event in events {
        guard let method = notifier.notification(for: event) else { continue }
        server.notify(method, gid: event.id.description)
      }
    }
    return Daemon(
      manager: manager, server: server, secret: secret, notifications: notifications, shutdown: shutdown)
  }

  /// Returns once `aria2.shutdown` (or `forceShutdown`) was called, or `requestShutdown()`.
  package func waitForShutdownRequest() async { await shutdown.wait() }

  /// Makes `waitForShutdownRequest` return (a signal's handler calls it).
  package func requestShutdown() { shutdown.request() }

  /// Stops serving (answers being sent get up to `grace` seconds), then closes the manager:
  /// running downloads stop with their bytes kept and continue at the next start.
  package func stop(grace: Double = 3) async {
    await server.stop(grace: grace)
    await manager.close()
    notifications.cancel()
  }

  /// Raises the soft limit on open files to the hard one (up to 65,536), for many clients and
  /// downloads at once; returns the limit in force.
  static func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    let wanted = min(limit.rlim_max, 65_536)
    if limit.rlim_cur < wanted {
      var raised = limit
      raised.rlim_cur = wanted
      if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
    }
    return Int(min(limit.rlim_cur, 1 << 20))
  }
}

/// aria2's notifications for the manager's events. A download taken off the catalog before it
/// stopped (`haul rm` through the control socket, `DownloadManager.remove`) has been stopped as
/// `aria2.remove` stops one, so it gets `onDownloadStop` too; its `.forgotten` event alone
/// cannot tell (forgetting a finished record is no stop), so the downloads not stopped are
/// followed here. A value owned by the task that sends the notifications.
struct Aria2Notifier {
  /// Queued, active or paused: not complete, failed or removed.
  private var unstopped: Set<DownloadID>

  init(_ downloads: [DownloadSnapshot]) {
    unstopped = Set(downloads.filter { !$0.state.isStopped }.map(\.id))
  }

  /// aria2's notification for `event`, if it has one.
  mutating func notification(for event: DownloadManagerEvent) -> String? {
    let id = event.id
    switch event {
    case .added(let download):
      if download.state.isStopped { unstopped.remove(id) } else { unstopped.insert(id) }
      return nil
    case .queued, .responded, .progress, .retrying, .restarted:
      unstopped.insert(id)
      return nil
    case .started:
      unstopped.insert(id)
      return "aria2.onDownloadStart"
    case .paused:
      unstopped.insert(id)
      return "aria2.onDownloadPause"
    case .completed:
      unstopped.remove(id)
      return "aria2.onDownloadComplete"
    case .failed:
      unstopped.remove(id)
      return "aria2.onDownloadError"
    case .removed:
      unstopped.remove(id)
      return "aria2.onDownloadStop"
    case .forgotten:
      return unstopped.remove(id) != nil ? "aria2.onDownloadStop" : nil
    case .changed:
      return nil
    }
  }
}

/// Once requested, stays requested; whoever waits hears it.
private final class ShutdownSignal: Sendable {
  private struct State {
    var requested = false
    var waiters: [CheckedContinuation<Void, Never>] = []
  }
  private let state = Locked(State())

  func request() {
    let waiters = state.withLock { state in
      state.requested = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  func wait() async {
    await withCheckedContinuation { continuation in
      let requested = state.withLock { state in
        if !state.requested { state.waiters.append(continuation) }
        return state.requested
      }
      if requested { continuation.resume() }
    }
  }
}
