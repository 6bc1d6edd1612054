import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Drains a fleet queue: claims jobs (up to `concurrency` at once), downloads each under a lease
/// it keeps renewing with the job's progress, and records the result in one transaction. Many
/// workers on many hosts share a queue; `haul worker` is this type on the command line.
///
/// ```swift
/// let queue = try await FleetQueue(PostgresAddress("postgresql://haul@db.example/haul"))
/// let worker = try FleetWorker(
///   queue: queue, configuration: .init(baseDirectory: URL(fileURLWithPath: "/srv/mirror")))
/// Task { for await event in worker.events { print(event) } }
/// // On SIGTERM: worker.drain() — its jobs are paused, saved and given back to the queue.
/// let summary = try await worker.run()
/// ```
///
/// The lease, not a local lock, decides who may work on a job: a worker that cannot renew its
/// lease in time (the database unreachable, the process stalled) stops the download before the
/// lease can expire, and once a renewal says the lease is gone it records nothing more for the
/// job. The engine's lock on the `.part` file is the second line: a new holder that finds the
/// `.part` still locked by the old one gives the job back for a few seconds instead of writing.
public final class FleetWorker: Sendable {
  public struct Configuration: Sendable {
    /// Shown in `haul ls` as the holder of the worker's jobs; unique per process is best.
    public var name: String
    /// Jobs downloaded at once.
    public var concurrency: Int = 4
    /// Jobs' directories are relative to this; nothing is written outside it.
    public var baseDirectory: URL
    /// Seconds a claim or renewal holds a job. A dead worker's jobs are taken over this long
    /// after its last renewal.
    public var leaseSeconds: Double = 30
    /// Progress is written to the queue at most this often per job (each write renews the lease).
    public var progressInterval: Double = 0.5
    /// How often an idle worker asks for work again.
    public var idlePollInterval: Double = 1
    /// How often this worker takes back expired leases and queues due retries (any worker may).
    public var maintenanceInterval: Double = 2
    /// Claims of a job that may end in a network failure before the job fails.
    public var maxAttempts: Int = 5
    /// Leases of a job that may expire (workers dying on it) before the job fails.
    public var maxLostLeases: Int = 10
    /// Return from `run()` once no job is queued, delayed or held anywhere in the queue.
    public var exitWhenIdle = false
    /// Headers added to every request of this worker (after the job's own).
    public var requestHeaders: [(name: String, value: String)] = []
    /// A cap over all of this worker's downloads.
    public var sharedRateLimit: BandwidthLimit?

    public init(name: String = FleetWorker.defaultName, baseDirectory: URL) {
      self.name = name
      self.baseDirectory = baseDirectory
    }
  }

  /// `host:pid`.
  public static var defaultName: String {
    var buffer = [CChar](repeating: 0, count: 256)
    let host =
      gethostname(&buffer, buffer.count) == 0
      ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
    return "\(host):\(getpid())"
  }

  public let queue: FleetQueue
  public let configuration: Configuration
  /// Everything the worker does, in order; one consumer, oldest dropped if it falls far behind.
  public let events: AsyncStream<FleetWorkerEvent>

  private let continuation: AsyncStream<FleetWorkerEvent>.Continuation
  private struct State {
    var draining = false
    /// By lease token: a job may be claimed again while the runner of its lost lease winds down.
    var runners: [Int64: FleetJobRunner] = [:]
    var summary = FleetWorkerSummary()
  }
  private let state = Locked(State())
  private let wakeup = Wakeup()
  private let health: FleetQueueHealth

  /// - Throws: `HaulError` (`.invalidInput`) for unusable settings.
  public init(queue: FleetQueue, configuration: Configuration) throws(HaulError) {
    guard (1...256).contains(configuration.concurrency) else {
      throw HaulError(
        .invalidInput, "a worker runs 1 to 256 jobs at once (asked for \(configuration.concurrency))")
    }
    guard configuration.leaseSeconds >= 2, configuration.leaseSeconds <= 3600 else {
      throw HaulError(.invalidInput, "the lease must be 2 to 3600 seconds")
    }
    guard configuration.progressInterval > 0, configuration.progressInterval < configuration.leaseSeconds / 4
    else {
      throw HaulError(.invalidInput, "progress must be written more often than every quarter lease")
    }
    guard !configuration.name.isEmpty, configuration.name.utf8.count <= 200 else {
      throw HaulError(.invalidInput, "a worker name must have 1 to 200 characters")
    }
    // A worker that cannot write under its base would fail every job it claims, draining the
    // whole fleet's queue into failures in seconds: it refuses to start instead.
    try UserFiles.requireWritableDirectory(configuration.baseDirectory.path)
    self.queue = queue
    self.configuration = configuration
    (events, continuation) = AsyncStream.makeStream(
      of: FleetWorkerEvent.self, bufferingPolicy: .bufferingNewest(4096))
    let continuation = self.continuation
    health = FleetQueueHealth(emit: { continuation.yield($0) })
  }

  /// Stops claiming, pauses every job it holds (their bytes saved), gives them back to the
  /// queue for other workers, and lets `run()` return. Safe from any thread, e.g. a signal handler's queue.
  public func drain() {
    let runners = state.withLock { state in
      state.draining = true
      return Array(state.runners.values)
    }
    for runner in runners { runner.stop(.drain) }
    wakeup.wake()
  }

  /// Works until `drain()` (or, with `exitWhenIdle`, until the queue has nothing left to do).
  public func run() async throws(HaulError) -> FleetWorkerSummary {
    // A discarding group: a worker runs for months, and finished jobs must not pile up in it.
    await withDiscardingTaskGroup { group in
      await claimLoop(group: &group)
      drain()
    }
    continuation.finish()
    return state.withLock { $0.summary }
  }

  private var isDraining: Bool { state.withLock { $0.draining } }
  private var running: Int { state.withLock { $0.runners.count } }

  private func claimLoop(group: inout DiscardingTaskGroup) async {
    var nextMaintenance = 0.0
    var failures = 0
    while !isDraining {
      let now = LeaseClock.seconds()
      if now >= nextMaintenance {
        do throws(HaulError) {
          try await queue.maintain(maxLostLeases: configuration.maxLostLeases)
          health.succeeded()
        } catch {
          health.failed(error)
        }
        nextMaintenance = now + configuration.maintenanceInterval * Double.random(in: 0.75...1.25)
      }
      guard running < configuration.concurrency else {
        await wakeup.wait(seconds: configuration.maintenanceInterval)
        continue
      }
      let sentAt = LeaseClock.seconds()
      let claim: FleetClaim
      do throws(HaulError) {
        claim = try await queue.claim(worker: configuration.name, leaseSeconds: configuration.leaseSeconds)
        failures = 0
        health.succeeded()
      } catch {
        health.failed(error)
        failures += 1
        await wakeup.wait(seconds: min(30, 0.5 * Double(1 << min(failures, 6))))
        continue
      }
      switch claim {
      case .claimed(let lease):
        start(lease, claimSentAt: sentAt, group: &group)
      case .busy:
        try? await Task.sleep(for: .milliseconds(Int.random(in: 5...50)))
      case .idle:
        if configuration.exitWhenIdle, running == 0, await queueIsDrained() { return }
        await wakeup.wait(seconds: configuration.idlePollInterval * Double.random(in: 0.8...1.2))
      }
    }
  }

  private func start(_ lease: FleetLease, claimSentAt: Double, group: inout DiscardingTaskGroup) {
    continuation.yield(
      .claimed(
        id: lease.id, url: RequestURL.withoutPassword(lease.url), connections: lease.connections,
        recordedBytes: lease.bytes))
    let continuation = self.continuation
    let runner = FleetJobRunner(
      lease: lease, claimSentAt: claimSentAt, queue: queue, configuration: configuration, health: health,
      emit: { continuation.yield($0) })
    let drainNow = state.withLock { state in
      state.runners[lease.token] = runner
      return state.draining
    }
    if drainNow { runner.stop(.drain) }
    group.addTask {
      let disposition = await runner.run()
      self.state.withLock { state in
        state.runners[lease.token] = nil
        switch disposition {
        case .complete: state.summary.completed += 1
        case .fail: state.summary.failed += 1
        case .release: state.summary.released += 1
        case .abandon: state.summary.leasesLost += 1
        }
      }
      self.wakeup.wake()
    }
  }

  /// Nothing queued, delayed or held anywhere: nothing can become claimable without a person.
  private func queueIsDrained() async -> Bool {
    guard let counts = try? await queue.counts() else { return false }
    return (counts[.queued] ?? 0) + (counts[.delayed] ?? 0) + (counts[.active] ?? 0) == 0
  }
}

/// A sleep that `wake()` cuts short (the claim loop waits on it when idle or full).
final class Wakeup: Sendable {
  private struct Box {
    var waiter: CheckedContinuation<Void, Never>?
    var token: UInt64 = 0
    var pending = false
  }
  private let box = Locked(Box())

  func wake() {
    let waiter: CheckedContinuation<Void, Never>? = box.withLock { box in
      guard let waiter = box.waiter else {
        box.pending = true
        return nil
      }
      box.waiter = nil
      return waiter
    }
    waiter?.resume()
  }

  func wait(seconds: Double) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let token: UInt64? = box.withLock { box in
        if box.pending {
          box.pending = false
          return nil
        }
        box.token &+= 1
        box.waiter = continuation
        return box.token
      }
      guard let token else {
        continuation.resume()
        return
      }
      DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { [box] in
        let waiter: CheckedContinuation<Void, Never>? = box.withLock { box in
          guard box.token == token, let waiter = box.waiter else { return nil }
          box.waiter = nil
          return waiter
        }
        waiter?.resume()
      }
    }
  }
}
