import Dispatch
import HaulCore

/// One 50 ms timer for every running download of the process, instead of a timer each: making,
/// starting and cancelling a dispatch timer wakes libdispatch's manager thread, which a batch
/// of small files (each done within a tick or two) paid several times per file.
///
/// Thread: the ticks run on the ticker's queue; `add` and `remove` from any thread.
final class RunTicker: Sendable {
  static let shared = RunTicker()

  /// How often every run's machine gets its `tick`.
  static let interval = DispatchTimeInterval.milliseconds(50)

  private struct Registry {
    var runs: [ObjectIdentifier: Entry] = [:]
    /// Running while any run is registered.
    var timer: (any DispatchSourceTimer)?
  }

  /// Weak: a run that ends without `remove` (it always calls it) is not kept alive.
  private struct Entry {
    weak var run: DownloadRun?
  }

  private let queue = DispatchQueue(label: "haul.ticker")
  private let registry = Locked(Registry())

  /// Ticks `run` from the next tick on, until `remove`.
  func add(_ run: DownloadRun) {
    let started: (any DispatchSourceTimer)? = registry.withLock { registry in
      registry.runs[ObjectIdentifier(run)] = Entry(run: run)
      guard registry.timer == nil else { return nil }
      let timer = DispatchSource.makeTimerSource(queue: queue)
      timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval)
      timer.setEventHandler { [weak self] in self?.tick() }
      registry.timer = timer
      return timer
    }
    started?.resume()
  }

  func remove(_ run: DownloadRun) {
    let stopped: (any DispatchSourceTimer)? = registry.withLock { registry in
      registry.runs[ObjectIdentifier(run)] = nil
      guard registry.runs.isEmpty else { return nil }
      defer { registry.timer = nil }
      return registry.timer
    }
    stopped?.cancel()
  }

  /// On the queue: each run's tick, outside the registry's lock.
  private func tick() {
    let runs = registry.withLock { $0.runs.values.compactMap(\.run) }
    for run in runs { run.tick() }
  }
}
