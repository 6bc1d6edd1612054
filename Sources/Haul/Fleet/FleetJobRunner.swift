import Dispatch
import FoundationEssentials

/// Runs one leased job: the download, the lease renewals carrying its progress, the watchdog that
/// stops the download when the lease can no longer be proven, and the final statement.
///
/// Threads: `run()` runs on the caller's task; the renewal and watchdog loops are child tasks;
/// `stop(_:)` may come from any thread. Shared state sits in `state` (no I/O under its lock: the
/// download is cancelled after the lock is released).
final class FleetJobRunner: Sendable {
  let lease: FleetLease
  private let queue: FleetQueue
  private let configuration: FleetWorker.Configuration
  private let health: FleetQueueHealth
  private let emit: @Sendable (FleetWorkerEvent) -> Void

  private struct State {
    var stop: FleetDisposition.Stop?
    var download: Download?
    var timer: LeaseTimer
    var progress = FleetProgress()
    var sentBytes: Int64?
    var finished = false
  }
  private let state: Locked<State>

  /// `claimSentAt`: the monotonic time just before the claim was sent.
  init(
    lease: FleetLease, claimSentAt: Double, queue: FleetQueue, configuration: FleetWorker.Configuration,
    health: FleetQueueHealth, emit: @escaping @Sendable (FleetWorkerEvent) -> Void
  ) {
    self.lease = lease
    self.queue = queue
    self.configuration = configuration
    self.health = health
    self.emit = emit
    state = Locked(
      State(
        timer: LeaseTimer(
          lease: configuration.leaseSeconds, progressInterval: configuration.progressInterval,
          claimSentAt: claimSentAt),
        progress: FleetProgress(bytes: lease.bytes, totalBytes: lease.totalBytes, file: lease.file)))
  }

  /// Stops the download (if it runs) for `reason`; the first reason wins, except that a lost
  /// lease overrides everything (nothing may be recorded for the job after that).
  func stop(_ reason: FleetDisposition.Stop) {
    let download: Download? = state.withLock { state in
      guard !state.finished else { return nil }
      if state.stop == nil || reason == .leaseLost { state.stop = reason }
      return state.download
    }
    download?.cancel(keepPartial: reason != .removeRequested)
  }

  /// Runs the job to its end and records the end; returns what was done.
  func run() async -> FleetDisposition {
    let outcome = await download()
    state.withLock { $0.finished = true }
    let stop = state.withLock { $0.stop }
    let disposition = FleetDisposition.decide(
      outcome: outcome, stop: stop, attempts: lease.attempts, maxAttempts: configuration.maxAttempts,
      jitter: Double.random(in: 0...1))
    // A final statement the database never took (it went away) leaves the job to the lease's
    // expiry: counted as a lost lease, as its event says, not as what was meant.
    return await record(disposition, outcome: outcome) ? disposition : .abandon
  }

  // MARK: - The download and its lease

  private func download() async -> Result<DownloadResult, HaulError> {
    let download: Download
    do throws(HaulError) {
      download = try makeDownload()
    } catch {
      return .failure(error)
    }
    let stopNow: FleetDisposition.Stop? = state.withLock { state in
      state.download = download
      return state.stop
    }
    if let stopNow { download.cancel(keepPartial: stopNow != .removeRequested) }
    return await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.observe(download) }
      group.addTask { await self.renewWhileRunning() }
      group.addTask { await self.watchLease() }
      let outcome: Result<DownloadResult, HaulError>
      do throws(HaulError) {
        outcome = .success(try await download.run())
      } catch {
        outcome = .failure(error)
      }
      state.withLock { $0.finished = true }
      group.cancelAll()
      await group.waitForAll()
      return outcome
    }
  }

  private func makeDownload() throws(HaulError) -> Download {
    var options = try lease.downloadOptions()
    options.headers += configuration.requestHeaders
    options.sharedRateLimit = configuration.sharedRateLimit
    return try Download(url: lease.url, to: try destination(), options: options)
  }

  /// Under the base directory only: the file an earlier holder named (so the next holder finds its
  /// `.part` even if the server names the file differently now), else the job's name, else the
  /// job's directory with the server's name. The database is untrusted input: paths are checked
  /// again here.
  private func destination() throws(HaulError) -> DownloadDestination {
    let base = configuration.baseDirectory
    if let recorded = lease.file, let path = try? FleetJobRequest.checkedDirectory(recorded), !path.isEmpty {
      try makeDirectory(base.appendingPathComponent(path).deletingLastPathComponent())
      return .file(base.appendingPathComponent(path))
    }
    let directory = try FleetJobRequest.checkedDirectory(lease.directory)
    let folder = directory.isEmpty ? base : base.appendingPathComponent(directory, isDirectory: true)
    try makeDirectory(folder)
    if let name = lease.fileName {
      guard FileNameSanitizer.sanitize(name, keepingLeadingDots: true) == name else {
        throw HaulError(.invalidInput, "the job's file name '\(name)' is not usable here")
      }
      return .file(folder.appendingPathComponent(name))
    }
    return .directory(folder)
  }

  /// A directory that cannot be made is this host's problem (permissions, a file in the way, a
  /// read-only disk), not the job's: the job goes back for other workers (`FleetDisposition`).
  private func makeDirectory(_ url: URL) throws(HaulError) {
    do throws(HaulError) {
      try LocalDirectory.prepare(url.path)
    } catch {
      throw HaulError(
        .fileSystem, error.message, hint: error.hint, underlying: FleetHostDirectoryUnusable(cause: error))
    }
  }

  private func observe(_ download: Download) async {
    for await event in download.events {
      switch event {
      case .started(let start):
        let file = relativePath(start.file)
        state.withLock {
          $0.progress.file = file ?? $0.progress.file
          $0.progress.finalURL = start.finalURL
          $0.progress.totalBytes = start.totalBytes
          $0.progress.bytes = start.resumedFrom
        }
        emit(.started(id: lease.id, start))
      case .progress(let progress):
        state.withLock {
          $0.progress.bytes = progress.bytes
          $0.progress.totalBytes = progress.totalBytes ?? $0.progress.totalBytes
          $0.progress.bytesPerSecond = progress.bytesPerSecond
        }
        emit(.progress(id: lease.id, progress))
      default:
        break
      }
    }
  }

  /// Renews the lease with progress at most every `progressInterval`, and at least every quarter
  /// lease; acts on a pause or remove asked from elsewhere, and on a lost lease.
  private func renewWhileRunning() async {
    let tick = min(configuration.progressInterval, configuration.leaseSeconds / 8)
    while !Task.isCancelled {
      try? await Task.sleep(for: .seconds(tick))
      let now = LeaseClock.seconds()
      let due: FleetProgress? = state.withLock { state in
        guard !state.finished, state.stop != .leaseLost,
          state.timer.renewalDue(now: now, progressChanged: state.progress.bytes != state.sentBytes)
        else { return nil }
        state.timer.sent(at: now)
        return state.progress
      }
      guard let progress = due else { continue }
      do throws(HaulError) {
        let answer = try await queue.renew(
          lease, progress: progress, leaseSeconds: configuration.leaseSeconds)
        health.succeeded()
        switch answer {
        case .lost:
          stop(.leaseLost)
        case .held(let request):
          state.withLock {
            $0.timer.renewed(sentAt: now)
            $0.sentBytes = progress.bytes
          }
          if request == "pause" { stop(.pauseRequested) }
          if request == "remove" { stop(.removeRequested) }
        }
      } catch {
        health.failed(error)
      }
    }
  }

  /// Stops the download the moment the last proven renewal is too old to keep writing.
  private func watchLease() async {
    while !Task.isCancelled {
      let (expired, left) = state.withLock { state in
        let now = LeaseClock.seconds()
        return (state.timer.mustStopWriting(now: now), state.timer.writableUntil - now)
      }
      if expired {
        stop(.leaseLost)
        return
      }
      try? await Task.sleep(for: .seconds(min(max(left, 0.01), 0.25)))
    }
  }

  // MARK: - The end

  /// Records the end in the queue and says so; false when the database did not take it.
  private func record(_ disposition: FleetDisposition, outcome: Result<DownloadResult, HaulError>) async
    -> Bool
  {
    let bytes = state.withLock { $0.progress.bytes }
    switch disposition {
    case .abandon:
      if case .success = outcome {
        emit(.leaseLost(id: lease.id, finished: true))
      } else {
        emit(.leaseLost(id: lease.id, finished: false))
      }
      return true
    case .complete:
      guard case .success(let result) = outcome else { return true }
      let file = relativePath(result.file) ?? result.file.lastPathComponent
      let recorded = await persist { () throws(HaulError) -> Bool in
        try await self.queue.complete(self.lease, result: result, file: file)
      }
      emit(recorded == true ? .completed(id: lease.id, result) : .leaseLost(id: lease.id, finished: true))
      return recorded == true
    case .fail(let error):
      let recorded = await persist { () throws(HaulError) -> Bool in
        try await self.queue.fail(self.lease, error: error, bytes: bytes)
      }
      emit(recorded == true ? .failed(id: lease.id, error) : .leaseLost(id: lease.id, finished: false))
      return recorded == true
    case .release(let delay, let counts, let reason):
      let state = await persist { () throws(HaulError) -> FleetJob.State? in
        try await self.queue.release(
          self.lease, delay: delay, countsAsAttempt: counts, reason: reason, bytes: bytes)
      }
      if let state = state ?? nil {
        emit(.released(id: lease.id, state: state, reason: reason))
        return true
      }
      emit(.leaseLost(id: lease.id, finished: false))
      return false
    }
  }

  /// Runs a final statement, retrying while the database is unreachable and the lease may still
  /// be ours; nil when it never got through (the lease then expires and the job is taken back).
  private func persist<T: Sendable>(_ statement: @Sendable () async throws(HaulError) -> T) async -> T? {
    var delay = 0.2
    while true {
      do throws(HaulError) {
        let value = try await statement()
        health.succeeded()
        return value
      } catch {
        health.failed(error)
        let expired = state.withLock { $0.timer.mustStopWriting(now: LeaseClock.seconds()) }
        if expired { return nil }
        try? await Task.sleep(for: .seconds(delay))
        delay = min(delay * 2, 2)
      }
    }
  }

  /// `file` relative to the base directory, or nil when it is not under it.
  private func relativePath(_ file: URL) -> String? {
    let base = configuration.baseDirectory.standardizedFileURL.path
    let path = file.standardizedFileURL.path
    let prefix = base.hasSuffix("/") ? base : base + "/"
    return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil
  }
}

/// Seconds on a monotonic clock that keeps counting while the machine sleeps (a lease runs on
/// while a laptop is suspended, so its holder must see that time pass too).
enum LeaseClock {
  private static let start = ContinuousClock.now

  static func seconds() -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
  }
}
