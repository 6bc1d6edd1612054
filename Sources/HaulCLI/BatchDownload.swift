import Dispatch
import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Several URLs in one run (`haul URL URL…`, `-i FILE`): up to `-j` downloads at once (planned
/// by `BatchPlan`), one line per finished file, and an exit status that says whether all succeeded.
enum BatchDownload {
  /// The exit status of a batch (nil: a URL that was not started): 130 when interrupted, else
  /// the status of the first failure in the order the URLs were given, else success.
  static func exitStatus(_ statuses: [Int32?], interrupted: Bool) -> Int32 {
    if interrupted { return ExitStatus.interrupted }
    return statuses.lazy.compactMap { $0 }.first { $0 != ExitStatus.success } ?? ExitStatus.success
  }

  static func run(_ options: CommandLineOptions, sink: OutputSink) async -> Int32 {
    let jobs: [DownloadJob]
    do throws(HaulError) {
      let plan = try BatchPlan.make(options)
      jobs = plan.jobs
      BatchPlan.tell(plan.notes, options: options, sink: sink)
      if jobs.isEmpty { return ExitStatus.success }
      if !options.json { BatchPlan.tell(plan.renamed.map(\.note), options: options, sink: sink) }
    } catch {
      return HaulCommand.setupFailure(error, json: options.json, sink: sink)
    }
    let urls = jobs.map(\.source)
    let clockStart = ContinuousClock.now
    let style = HaulCommand.reporterStyle(for: options, stderrIsTerminal: Terminal.stderrIsTerminal)
    let reporter = BatchReporter(
      style: style, sink: sink, urls: urls,
      now: { (ContinuousClock.now - clockStart) / .seconds(1) }, width: { Terminal.stderrWidth() },
      height: { Terminal.stderrHeight() },
      labels: jobs.map { NameCollisions.expectedName(source: $0.source, destination: $0.destination) })
    let (inputs, continuation) = DisplayInput<(Int, DownloadEvent)>.makeStream(
      tickEvery: style == .terminal ? Reporter.tickInterval : nil, bufferingPolicy: .bufferingNewest(1 << 16))
    let consumer = Task {
      var reporter = reporter
      for await input in inputs {
        switch input {
        case .event(let (index, event)): reporter.handle(index, event)
        case .tick: reporter.tick()
        }
      }
      return reporter
    }
    let running = RunningDownloads()
    let interrupts = InterruptHandler(
      first: { running.stopAll() },
      again: {
        sink.stderr(style == .terminal ? "\n" : "")
        exit(ExitStatus.interrupted)
      })
    defer { interrupts.stop() }

    var statuses = [Int32?](repeating: nil, count: urls.count)
    await withTaskGroup(of: (Int, Int32).self) { group in
      var next = 0
      func startNext() {
        let index = next
        next += 1
        group.addTask {
          await one(index: index, jobs[index], running: running, events: continuation, quiet: style == .quiet)
        }
      }
      while next < min(urls.count, options.parallel ?? CommandLineOptions.defaultParallel) { startNext() }
      while let (index, status) = await group.next() {
        statuses[index] = status
        if next < urls.count, !running.isStopped { startNext() }
      }
    }
    continuation.finish()
    var finished = await consumer.value
    finished.finish(statuses: statuses, interrupted: running.isStopped)
    return exitStatus(statuses, interrupted: running.isStopped)
  }

  /// One URL of the batch, start to end; its events go to the shared stream (when `quiet`, only
  /// its failure: the one event a quiet display shows).
  private static func one(
    index: Int, _ job: DownloadJob, running: RunningDownloads,
    events: AsyncStream<DisplayInput<(Int, DownloadEvent)>>.Continuation, quiet: Bool
  ) async -> (Int, Int32) {
    // What the display gets for a failure the download's events do not carry.
    func failed(_ error: HaulError) -> (Int, Int32) {
      events.yield(.event((index, .failed(CommandWording(naming: .batch).translate(error)))))
      return (index, ExitStatus.code(for: error))
    }
    let download: Download
    do throws(HaulError) {
      download = try Download(url: job.source, to: job.destination, options: job.options)
    } catch {
      return failed(error)
    }
    guard running.add(download) else { return (index, ExitStatus.interrupted) }
    defer { running.remove(download) }
    // Quiet: `run()` throws the error its `.failed` event carries, so the events need no
    // reader, nor a task and a wakeup each (three for a small file, a thousand files a batch).
    let forward =
      quiet
      ? nil
      : Task {
        for await event in download.events {
          events.yield(.event((index, CommandWording(naming: .batch).translate(event))))
        }
      }
    do throws(HaulError) {
      try await download.run()
      await forward?.value
      return (index, ExitStatus.success)
    } catch {
      await forward?.value
      return quiet ? failed(error) : (index, ExitStatus.code(for: error))
    }
  }
}

/// The downloads of a batch that are running, so that Ctrl-C can stop them all and no new
/// one starts afterwards.
final class RunningDownloads: @unchecked Sendable {
  /// Serializes `downloads` and `stopped` (a queue: Foundation's locks would load all of it).
  private let lock = DispatchQueue(label: "haul.batch")
  private var downloads: [ObjectIdentifier: Download] = [:]
  private var stopped = false

  var isStopped: Bool { lock.sync { stopped } }

  /// false when the batch was stopped: the download must not start.
  func add(_ download: Download) -> Bool {
    lock.sync {
      guard !stopped else { return false }
      downloads[ObjectIdentifier(download)] = download
      return true
    }
  }

  func remove(_ download: Download) {
    _ = lock.sync { downloads.removeValue(forKey: ObjectIdentifier(download)) }
  }

  func stopAll() {
    let stopping = lock.sync {
      stopped = true
      return Array(downloads.values)
    }
    for download in stopping { download.cancel(keepPartial: true) }
  }
}
