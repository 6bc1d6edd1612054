import Dispatch
import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul worker`: one member of a fleet draining a PostgreSQL queue (`FleetWorker` on the command line).
enum WorkerCommand {
  static func run(
    _ arguments: [String], sink: OutputSink,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) async -> Int32 {
    let options: WorkerOptions
    do throws(UsageError) {
      options = try WorkerOptions.parse(arguments, environment: environment)
    } catch {
      sink.stderr("haul: \(error.message)\nTry 'haul worker --help'.\n")
      return ExitStatus.usage
    }
    if options.help {
      sink.stdout(WorkerOptions.helpText)
      return ExitStatus.success
    }
    let worker: FleetWorker
    do throws(HaulError) {
      worker = try await makeWorker(options)
    } catch {
      return HaulCommand.setupFailure(error, json: options.json, sink: sink)
    }
    let printer = WorkerPrinter(
      name: worker.configuration.name, json: options.json, quiet: options.quiet, sink: sink)
    printer.started(queue: worker.queue.address, configuration: worker.configuration)
    let draining = Locked(false)
    let drain: @Sendable () -> Void = {
      let first = draining.withLock { started in
        defer { started = true }
        return !started
      }
      guard first else { return }
      printer.draining()
      worker.drain()
    }
    // A second Ctrl-C leaves now (the leases expire and other workers take the jobs over). A
    // repeated SIGTERM or SIGHUP does not: `timeout` and supervisors send one to the process and
    // one to its group, and that pair cut the drain short (exit 130, the jobs left held).
    let interrupts = InterruptHandler(
      signals: [SIGINT], first: drain, again: { exit(ExitStatus.interrupted) })
    let terminations = InterruptHandler(signals: [SIGTERM, SIGHUP], first: drain, again: {})
    defer {
      interrupts.stop()
      terminations.stop()
    }
    let consumer = Task {
      for await event in worker.events { printer.print(event) }
    }
    let summary: FleetWorkerSummary
    do throws(HaulError) {
      summary = try await worker.run()
    } catch {
      consumer.cancel()
      return HaulCommand.setupFailure(error, json: options.json, sink: sink)
    }
    await consumer.value
    printer.finished(summary)
    await worker.queue.close()
    return ExitStatus.success
  }

  private static func makeWorker(_ options: WorkerOptions) async throws(HaulError) -> FleetWorker {
    let address = try PostgresAddress(options.queue ?? "")
    var status = stat()
    guard stat(options.directory, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
      throw HaulError(
        .fileSystem, "the directory \(options.directory) does not exist",
        hint: "create it first, or give another with -d")
    }
    var configuration = FleetWorker.Configuration(
      baseDirectory: URL(fileURLWithPath: options.directory, isDirectory: true).standardizedFileURL)
    if let name = options.name { configuration.name = name }
    configuration.concurrency = options.jobs
    configuration.leaseSeconds = options.leaseSeconds
    configuration.exitWhenIdle = options.exitWhenIdle
    configuration.requestHeaders = options.headers.map { ($0.name, $0.value) }
    configuration.sharedRateLimit = options.rateLimit.map { BandwidthLimit(bytesPerSecond: $0) }
    let queue = try await FleetQueue(address, applicationName: "haul worker \(configuration.name)")
    return try FleetWorker(queue: queue, configuration: configuration)
  }
}

/// The worker's lines: plain text on stderr (one per claim and end), or JSON objects on stdout.
/// Progress is not printed: it is in the queue (`haul ls --queue`).
struct WorkerPrinter: Sendable {
  let name: String
  let json: Bool
  let quiet: Bool
  let sink: OutputSink

  private func line(_ text: String) {
    if !quiet { sink.stderr("haul worker \(name): " + ProgressLine.sanitize(text) + "\n") }
  }

  private func object(_ event: String, _ fields: [(String, JSONEventLine.Value)]) {
    sink.stdout(JSONEventLine.object([("event", .string(event)), ("worker", .string(name))] + fields) + "\n")
  }

  func started(queue: PostgresAddress, configuration: FleetWorker.Configuration) {
    if json {
      object(
        "worker_started",
        [
          ("queue", .string(queue.redacted)), ("jobs", .int(Int64(configuration.concurrency))),
          ("directory", .string(configuration.baseDirectory.path)),
        ])
    } else {
      line(
        "working on \(queue.redacted), \(configuration.concurrency) at a time, into \(configuration.baseDirectory.path)"
      )
    }
  }

  func draining() {
    if json { object("draining", []) } else { line("stopping: pausing and giving back its jobs") }
  }

  func finished(_ summary: FleetWorkerSummary) {
    if json {
      object(
        "worker_finished",
        [
          ("completed", .int(Int64(summary.completed))), ("failed", .int(Int64(summary.failed))),
          ("released", .int(Int64(summary.released))), ("leases_lost", .int(Int64(summary.leasesLost))),
        ])
    } else {
      line(
        "done: \(summary.completed) completed, \(summary.failed) failed, \(summary.released) given back, "
          + "\(summary.leasesLost) lease\(summary.leasesLost == 1 ? "" : "s") lost")
    }
  }

  func print(_ event: FleetWorkerEvent) {
    switch event {
    case .claimed(let id, let url, let connections, let recorded):
      if json {
        object(
          "claimed",
          [
            ("id", .string(id)), ("url", .string(url)), ("connections", .int(Int64(connections))),
            ("recorded_bytes", .int(recorded)),
          ])
      } else {
        line("claimed \(id) \(url) (\(connections) connection\(connections == 1 ? "" : "s"))")
      }
    case .started(let id, let start):
      if json {
        object(
          "started",
          [
            ("id", .string(id)), ("file", .string(start.file.path)),
            ("resumed_from", .int(start.resumedFrom)),
            ("total", .optional(start.totalBytes)),
          ])
      } else if start.resumedFrom > 0 {
        line("\(id) resumes \(start.file.lastPathComponent) from byte \(start.resumedFrom)")
      }
    case .progress:
      break
    case .completed(let id, let result):
      if json {
        object(
          "completed",
          [
            ("id", .string(id)), ("file", .string(result.file.path)), ("bytes", .int(result.totalBytes)),
            ("received", .int(result.bytesReceived)), ("sha256", .optional(result.sha256)),
          ])
      } else {
        line("✓ \(id) saved \(result.file.path) (\(result.totalBytes) bytes)")
      }
    case .failed(let id, let error):
      if json {
        object(
          "failed",
          [
            ("id", .string(id)), ("category", .string(JSONEventLine.categoryName(error.category))),
            ("message", .string(error.message)),
          ])
      } else {
        line("✗ \(id) failed: \(error.message)")
      }
    case .released(let id, let state, let reason):
      if json {
        object(
          "released",
          [("id", .string(id)), ("state", .string(state.rawValue)), ("reason", .optional(reason?.message))])
      } else {
        line("\(id) given back (\(state.rawValue))" + (reason.map { ": \($0.message)" } ?? ""))
      }
    case .leaseLost(let id, let finished):
      if json {
        object("lease_lost", [("id", .string(id)), ("finished", .bool(finished))])
      } else if finished {
        // The database may simply have been unreachable: no other worker need be involved.
        line(
          "\(id): downloaded, but its lease ran out before the queue recorded it (expired or taken "
            + "over); the next claim finds the file")
      } else {
        line(
          "\(id): its lease ran out (expired while the queue was unreachable, or taken over); "
            + "stopped, recorded nothing; the job is claimed again")
      }
    case .queueError(let error):
      if json {
        object("queue_error", [("message", .string(error.message))])
      } else if !quiet {
        sink.stderr(
          "haul worker \(name): queue: " + ProgressLine.sanitize(error.message)
            + " (retrying; said again every minute while it lasts)\n")
      }
    case .queueReachable:
      if json { object("queue_reachable", []) } else { line("queue: reachable again") }
    }
  }
}
