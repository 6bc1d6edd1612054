import FoundationEssentials
import Haul
import HaulDaemon

/// What `haul daemon` prints on standard error: where it listens and where the secret is, then
/// one line per download that starts, pauses, stops, completes or fails.
struct DaemonLog: Sendable {
  let sink: OutputSink
  let quiet: Bool

  func started(_ daemon: Daemon) {
    let snapshot = daemon.manager.snapshot()
    let stats = snapshot.statistics
    let count = snapshot.downloads.count
    line(
      "haul daemon \(HaulLibrary.version): \(count) download\(count == 1 ? "" : "s") in \(daemon.manager.catalog.path) "
        + "(\(stats.active) active, \(stats.waiting) waiting, \(stats.stopped) finished)")
    let endpoints = daemon.server.addresses.map { address in
      address.contains(":")
        ? "http://[\(address)]:\(daemon.server.port)/jsonrpc"
        : "http://\(address):\(daemon.server.port)/jsonrpc"
    }
    line("haul daemon: JSON-RPC and WebSocket at \(endpoints.joined(separator: " and "))")
    for missing in daemon.server.unavailableAddresses {
      line("haul daemon: not listening on \(missing): this machine has no such address")
    }
    if let path = daemon.secret.path {
      let made = daemon.secret.created ? "made now, readable only by you" : "readable only by you"
      line("haul daemon: the secret is in \(path) (\(made)); clients send it as \"token:SECRET\"")
    } else {
      line("haul daemon: clients send the secret given with --rpc-secret as \"token:SECRET\"")
    }
  }

  func print(_ event: DownloadManagerEvent, manager: DownloadManager) {
    let what: String
    switch event {
    case .started: what = "started"
    case .paused: what = "paused"
    case .removed: what = "removed"
    case .completed(_, let result): what = "complete: \(result.file.path)"
    case .failed(_, let error): what = "failed: \(error.message)"
    default: return
    }
    let url = manager.download(event.id)?.url ?? ""
    line("haul daemon: \(event.id) \(what)" + (url.isEmpty ? "" : " (\(url))"))
  }

  func stopping() {
    line("haul daemon: stopping; running downloads keep their bytes and go on at the next start")
  }

  private func line(_ text: String) {
    guard !quiet else { return }
    sink.stderr(ProgressLine.sanitize(text) + "\n")
  }
}
