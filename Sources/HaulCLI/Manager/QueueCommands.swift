import FoundationEssentials
import Haul

/// `haul add|ls|pause|resume|rm --queue postgresql://…` (or `HAUL_QUEUE`): the same
/// subcommands on a fleet's shared queue (`FleetQueue`), which `haul worker` processes drain.
/// Directories are relative to each worker's base directory (`haul worker -d BASE`).
enum QueueCommands {
  static func open(_ queue: String) async throws(HaulError) -> FleetQueue {
    try await FleetQueue(PostgresAddress(queue), applicationName: "haul")
  }

  /// The jobs the command line asks for: its URLs and `-i FILE`'s, with `-d`/`dir=` and
  /// `-o`/`out=` as the directory and name under the workers' base.
  static func requests(_ options: CommandLineOptions, sink: OutputSink) throws(HaulError) -> [FleetJobRequest]
  {
    try AddCommand.refuseStandardOutput(options, for: "a job in a shared queue")
    try refuseUncarried(options)
    if let output = options.output {
      let directory = LocalDirectory.parent(of: output) ?? ""
      let name = String(output.split(separator: "/").last ?? "")
      return [
        try FleetJobRequest(
          url: options.url, directory: directory, fileName: name, options: options.downloadOptions)
      ]
    }
    let (entries, notes) = BatchPlan.withoutRepeats(try BatchPlan.entries(options), options: options)
    BatchPlan.tell(notes, options: options, sink: sink)
    let jobs = BatchPlan.jobs(options, entries: entries)
    return try jobs.map { (job) throws(HaulError) -> FleetJobRequest in
      var name: String?
      if case .file(let file) = job.destination { name = file.lastPathComponent }
      let directory =
        job.directory == "."
        ? "" : job.directory.hasPrefix("./") ? String(job.directory.dropFirst(2)) : job.directory
      return try FleetJobRequest(url: job.source, directory: directory, fileName: name, options: job.options)
    }
  }

  /// The options of `haul URL…` a job cannot carry to the worker that downloads it (the queue
  /// keeps rate limit, checksum, headers, user agent, timeouts, retries, --overwrite,
  /// --no-sha256, --insecure and -x): refused, not dropped without a word.
  static func refuseUncarried(_ options: CommandLineOptions) throws(HaulError) {
    // As given on the command line: what the environment adds (trust, proxies) is the
    // worker's own environment's to add there.
    let network = options.network
    let tls = options.tls
    let defaults = NetworkOptions()
    let uncarried: [(given: Bool, spelling: String)] = [
      (network.username != nil || network.password != nil, "-u"),
      (network.netrcFile != nil, "--netrc"),
      (network.referer != nil, "--referer"),
      (network.cookies != nil || network.cookieFile != nil, "--cookie"),
      (network.cookieJar != nil, "--cookie-jar"),
      (network.proxy != nil, "--proxy"),
      (network.noProxy != nil, "--noproxy"),
      (network.ipVersion != defaults.ipVersion, "-4/-6"),
      (!network.resolve.isEmpty, "--resolve"),
      (network.maxRedirects != defaults.maxRedirects, "--max-redirs"),
      (network.maxFileSize != nil, "--max-filesize"),
      (tls.caFile != nil || tls.caDirectory != nil, "--cacert/--capath"),
      (
        tls.clientCertificate != nil || tls.clientKey != nil || tls.sshPublicKey != nil,
        "--cert/--key/--pubkey"
      ),
      (options.newerOnly, "-N"),
      (options.remoteTime && !options.newerOnly, "-R"),
      (options.continuePartial, "--continue"),
    ]
    let given = uncarried.filter(\.given).map(\.spelling)
    guard given.isEmpty else {
      throw HaulError(
        .invalidInput,
        "a job in a shared queue cannot carry \(given.joined(separator: ", ")): the worker that downloads it "
          + "has only the queue's copy of its options",
        hint:
          "leave \(given.count == 1 ? "it" : "them") out; a job carries -x, --limit-rate, --checksum, -H, -A, "
          + "--timeout, --retries, --overwrite, --no-sha256 and --insecure")
    }
  }

  static func add(_ options: CommandLineOptions, paused: Bool, queue: String, sink: OutputSink) async -> Int32
  {
    do throws(HaulError) {
      let requests = try requests(options, sink: sink)
      if requests.isEmpty { return ExitStatus.success }
      let fleet = try await open(queue)
      // Paused in the same statement that adds them: no worker can claim one first.
      let ids = try await fleet.add(requests, paused: paused)
      await fleet.close()
      var out = ""
      for (id, request) in zip(ids, requests) {
        if options.json {
          out += JSONEventLine.object([("id", .string(id)), ("url", .string(request.url))]) + "\n"
        } else if !options.quiet {
          out += id + "\n"
        }
      }
      sink.stdout(out)
      return ExitStatus.success
    } catch {
      return HaulCommand.setupFailure(error, json: options.json, sink: sink)
    }
  }

  /// Every job in the order added, a page at a time (memory stays flat for a long queue).
  static func list(queue: String, json: Bool, width: Int?, sink: OutputSink) async -> Int32 {
    let table = ListTable(width: width)
    var output = BufferedOutput(sink: sink)
    var count = 0
    do throws(HaulError) {
      let fleet = try await open(queue)
      var after: String?
      while true {
        let page = try await fleet.jobs(limit: 1000, after: after)
        for job in page {
          if json {
            output.append(Self.json(job) + "\n")
          } else {
            if count == 0 { output.append(table.header + "\n") }
            output.append(table.row(item(job)) + "\n")
          }
          count += 1
        }
        guard page.count == 1000, let last = page.last else { break }
        after = last.id
      }
      await fleet.close()
    } catch {
      output.flush()
      return ManagerCommand.failure(error, "ls", sink: sink)
    }
    output.flush()
    if count == 0, !json { sink.stderr("haul: no jobs in the queue\n") }
    return ExitStatus.success
  }

  static func change(
    _ verb: ChangeCommand.Verb, ids given: [String]?, queue: String, quiet: Bool, sink: OutputSink
  ) async -> Int32 {
    do throws(HaulError) {
      let resolver = try given.map { (given) throws(HaulError) in try IDResolver(given) }
      let fleet = try await open(queue)
      var ids: [String]?
      var states: [String: FleetJob.State] = [:]
      if let resolver {
        var matcher = IDResolver.Matcher(resolver)
        var after: String?
        while true {
          let page = try await fleet.jobs(limit: 10_000, after: after)
          for job in page {
            matcher.feed(job.id)
            states[job.id] = job.state
          }
          guard page.count == 10_000, let last = page.last else { break }
          after = last.id
        }
        ids = try matcher.result()
      }
      let changed: [String]
      switch verb {
      case .pause: changed = try await fleet.pause(ids)
      case .resume: changed = try await fleet.resume(ids)
      case .remove: changed = try await fleet.remove(ids ?? [])
      }
      await fleet.close()
      let done = Set(changed)
      var conflicts: [String] = []
      var leftAsItIs: [String] = []
      for id in ids ?? [] where !done.contains(id) {
        if let conflict = states[id].flatMap({ conflict(verb, id, $0) }) {
          conflicts.append(conflict)
        } else {
          leftAsItIs.append(id)
        }
      }
      if !quiet {
        sink.stderr(changed.map { "haul: \(verb.past) \($0)\n" }.joined())
        let nothingTo = verb == .remove ? "remove" : verb.rawValue
        sink.stderr(leftAsItIs.map { "haul: \($0) was left as it is (nothing to \(nothingTo))\n" }.joined())
      }
      // As for the catalog's downloads: a job whose state refuses the change exits 1.
      sink.stderr(conflicts.map { "haul: " + $0 + "\n" }.joined())
      return conflicts.isEmpty ? ExitStatus.success : ExitStatus.generic
    } catch {
      return ManagerCommand.failure(error, verb.rawValue, sink: sink)
    }
  }

  /// Why `verb` does not apply to a job in `state`, if it does not: a finished job has
  /// nothing to pause or resume (a paused one paused again is already as asked). Removed jobs
  /// are not listed, so their ids are not resolved.
  static func conflict(_ verb: ChangeCommand.Verb, _ id: String, _ state: FleetJob.State) -> String? {
    switch (verb, state) {
    case (.pause, .complete), (.pause, .failed), (.resume, .complete):
      "job \(id) is \(state.rawValue): there is nothing to \(verb.rawValue)"
    case (.resume, .failed):
      "job \(id) failed: resume continues paused jobs; 'haul queue retry \(id)' queues it again"
    default:
      nil
    }
  }

  static func item(_ job: FleetJob) -> ListTable.Item {
    var name = ListTable.name(
      file: job.file.map { String($0.split(separator: "/").last ?? "") } ?? job.fileName, url: job.url)
    if let worker = job.worker, job.state == .active { name += " @" + ProgressLine.sanitize(worker) }
    if job.state == .failed, let error = job.error {
      name += ": " + ProgressLine.sanitize(CommandWording.queue(job.id).translate(error.message))
    }
    return ListTable.Item(
      id: job.id, state: job.state.rawValue, bytes: job.bytes, totalBytes: job.totalBytes,
      complete: job.state == .complete, speed: job.state == .active ? job.bytesPerSecond : nil, name: name)
  }

  static func json(_ job: FleetJob) -> String {
    // A worker records the library's words; the command shows its own.
    let error = job.error.map { CommandWording.queue(job.id).translate($0) }
    return JSONEventLine.object([
      ("id", .string(job.id)),
      ("state", .string(job.state.rawValue)),
      ("bytes", .int(job.bytes)),
      ("total", .optional(job.totalBytes)),
      ("fraction", .optional(job.fraction.map { JSONEventLine.rounded($0, places: 4) })),
      ("bytes_per_second", .double(JSONEventLine.rounded(job.bytesPerSecond ?? 0, places: 1))),
      ("file", .optional(job.file)),
      ("url", .string(job.url)),
      ("error", .optional(error?.message)),
      ("error_category", .optional(error.map { JSONEventLine.categoryName($0.category) })),
      ("hint", .optional(error?.hint)),
      ("worker", .optional(job.worker)),
      ("finished_by", .optional(job.finishedBy)),
      ("priority", .int(Int64(job.priority))),
      ("directory", .string(job.directory)),
      ("attempts", .int(Int64(job.attempts))),
      ("lease_remaining", .optional(job.leaseRemaining.map { JSONEventLine.rounded($0, places: 1) })),
      ("sha256", .optional(job.sha256)),
    ])
  }
}
