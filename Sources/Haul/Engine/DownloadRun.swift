import CCurl
import Dispatch
import FoundationEssentials

/// One `Download.run()`: the executor of a `DownloadMachine`. Every event takes the machine's
/// lock once, lets the machine decide, releases the lock, and only then performs the actions:
/// starting and cancelling transfers, handing file work to the I/O lane, emitting events,
/// resuming the caller. See `Engine/README.md` for which thread owns what.
final class DownloadRun: Sendable {
  let url: String
  /// `url` as state files record it: without a password.
  let recordedURL: String
  let destination: DownloadDestination
  let options: DownloadOptions
  let transport: any Transport
  let control: DownloadControl
  let emit: @Sendable (DownloadEvent) -> Void
  /// This download's own limit and the shared one, if any.
  let rateLimiters: [RateLimiter]

  /// The decisions. Taken once per event; never held during I/O or a continuation resume.
  private let machine: Locked<DownloadMachine>
  /// The files, once known (before any request, or when the first response names them), and
  /// the hasher of the current data (replaced when the data starts over).
  let files = Locked(Files())
  /// The transport's handles of the transfers in flight.
  private let handles = Locked(Handles())
  /// The caller of `execute`, resumed with the result once the outcome's files are done.
  private let ending = Locked<Ending?>(nil)

  private struct Ending {
    let continuation: CheckedContinuation<Result<DownloadResult, HaulError>, Never>
    let started: UInt64
  }

  struct Files {
    var paths: DownloadPaths?
    var target: OpenTarget?
    var hasher: PrefixHasher? { didSet { if oldValue !== hasher { oldValue?.cancel() } } }
    /// A finished file's SHA-256 as its rerun verified it (`verifyFinished`).
    var finishedSHA256: String?
    /// `--continue` renamed another tool's partial at the target to the `.part` file
    /// (`adoptTarget`): a failure before its bytes are proven gives it its name back.
    var adoptedTarget = false
    /// The files above were opened before the request under the URL's name (`prepare`): where
    /// they start. They are the target once a response names them (`paths.name`).
    var prepared: StartPoint?
  }

  private struct Handles {
    var running: [TransferID: any TransferHandle] = [:]
    /// Cancelled before the transport handed out a handle: cancel it as soon as it does.
    var cancelledEarly: Set<TransferID> = []
  }

  /// `ownRateLimit`: the download's own limit, which `Download.setRateLimit` may change while
  /// this runs.
  init(
    url: String, destination: DownloadDestination, options: DownloadOptions, ownRateLimit: RateLimiter,
    transport: any Transport, control: DownloadControl, emit: @escaping @Sendable (DownloadEvent) -> Void,
    minimumSplit: Int64 = 1 << 20
  ) {
    self.url = url
    let recordedURL = RequestURL.withoutPassword(url)
    self.recordedURL = recordedURL
    self.destination = destination
    self.options = options
    self.transport = transport
    self.control = control
    self.emit = emit
    self.rateLimiters = [ownRateLimit] + (options.sharedRateLimit.map { [$0.limiter] } ?? [])
    let retry = RetryPolicy(
      baseDelay: options.retryBaseDelay, maxDelay: options.maxRetryDelay,
      maxAttemptsWithoutProgress: options.maxAttemptsWithoutProgress)
    let streams = Self.streams(destination, options)
    var configuration = DownloadMachine.Configuration(
      recordedURL: recordedURL, fixedConnections: streams ? 1 : options.connections,
      automaticCap: DownloadOptions.automaticConnectionCap, retry: retry, minimumSplit: minimumSplit,
      checkpointInterval: UInt64(options.checkpointInterval * 1e9),
      progressInterval: UInt64(options.progressInterval * 1e9),
      randomSeed: UInt64.random(in: 0...UInt64.max),
      rateLimit: RateLimiter.strictest(rateLimiters).map { Int64($0) })
    configuration.writesInOrderOnly = streams
    configuration.sendsCredentials =
      options.network.username != nil || options.network.netrcFile != nil
      || options.headers.contains { $0.name.lowercased() == "authorization" }
    self.machine = Locked(DownloadMachine(configuration))
  }

  // MARK: - The run

  /// The whole run leaves Swift's cooperative threads once and comes back once: the start
  /// (opening files) and the begin run on a thread that may wait on the disk, the end (sync,
  /// rename) on the download's lane after its last write, which is where the end is usually
  /// decided. Each hop to the pool and back woke two threads, several times per small file.
  func execute() async throws(HaulError) -> DownloadResult {
    let result = await withCheckedContinuation {
      (continuation: CheckedContinuation<Result<DownloadResult, HaulError>, Never>) in
      ending.withLock { $0 = Ending(continuation: continuation, started: Monotonic.now()) }
      BlockingWork.run { [self] in begin() }
    }
    return try result.get()
  }

  /// On a `BlockingWork` thread: finds and opens the files, then starts the machine.
  private func begin() {
    let start: StartPoint
    do throws(HaulError) { start = try resolveStart() } catch {
      if let caller = ending.withLock({ $0.take() }) { close(caller, with: .failure(error)) }
      return
    }
    // Before `begin`: an end decided at once removes it, never before it is added.
    RunTicker.shared.add(self)
    let request = control.attach(self)
    handle { $0.begin(start, now: $1) }
    switch request {
    case .run: break
    case .pause: pause()
    case .cancel(let keepPartial): cancel(keepPartial: keepPartial)
    }
  }

  /// The machine's end: the outcome's file work, then the caller (once, whatever else comes).
  /// Never on the event thread: on the lane, after the writes queued before (no thread to wake
  /// when the lane's last write ended the download), or on a thread of its own before there
  /// are files.
  private func end(_ outcome: DownloadEnding) {
    guard let caller = ending.withLock({ $0.take() }) else { return }
    let work: @Sendable () -> Void = { [self] in
      RunTicker.shared.remove(self)
      control.detach()
      let result: Result<DownloadResult, HaulError>
      do throws(HaulError) { result = .success(try conclude(outcome, started: caller.started)) } catch {
        result = .failure(error)
      }
      close(caller, with: result)
    }
    if let io = files.withLock({ $0.target })?.io { io.async(work) } else { BlockingWork.run(work) }
  }

  /// The last steps of every run, however it ends: the target is released, background hashing
  /// of its bytes stops, and the caller gets `result`.
  private func close(_ caller: Ending, with result: Result<DownloadResult, HaulError>) {
    releaseTarget()
    files.withLock { $0.hasher }?.cancel()
    caller.continuation.resume(returning: result)
  }

  private func conclude(_ outcome: DownloadEnding, started: UInt64) throws(HaulError) -> DownloadResult {
    switch outcome {
    case .complete(let state, let summary):
      return try finish(state, summary, started: started)
    case .alreadyComplete(let changed, let notChecked, let state):
      return try alreadyComplete(changed: changed, notChecked: notChecked, state, started: started)
    case .failed(let error, let state):
      if error.underlying is UnprovenPartial {
        leaveUnproven()
        throw error
      }
      keep(state)
      if (error.underlying as? TransportFailure)?.code == Int32(CCURLE_FILESIZE_EXCEEDED), state.heldBytes > 0
      {
        // Larger than accepted (`NetworkOptions.maxFileSize`) this time: the bytes a run
        // without that limit resumes from stay, as curl keeps them.
        throw HaulError(
          error.category, error.message,
          hint:
            "the \(ByteQuantity.format(state.heldBytes)) held were kept: \(LibraryWording.resumeWithoutSizeLimit)",
          underlying: error.underlying)
      }
      throw error
    case .interrupted(let keepPartial, let state):
      guard keepPartial else {
        discardPartial()
        throw HaulError(.interrupted, "cancelled; the partial download was discarded")
      }
      keep(state)
      throw stoppedError(state)
    }
  }

  func pause() { handle { $0.pause(now: $1) } }
  func resume() { handle { $0.resume(now: $1) } }
  func cancel(keepPartial: Bool) { handle { $0.cancel(keepPartial: keepPartial, now: $1) } }

  // MARK: - Events and actions

  /// One event: mutate the machine under its lock, then act on what it said.
  func handle(_ event: (inout DownloadMachine, UInt64) -> [DownloadAction]) {
    let now = Monotonic.now()
    perform(machine.withLock { event(&$0, now) })
  }

  /// The ticker's event. A limit shared with other downloads can change at any time; the
  /// strictest limit is read here, outside the machine's lock, and passed on when it changed.
  func tick() {
    let cap = RateLimiter.strictest(rateLimiters)
    handle { machine, now in
      if machine.rateCap != cap { machine.rateLimitChanged(to: cap, now: now) }
      return machine.tick(now: now)
    }
  }

  /// One event whose result the caller needs besides the actions.
  func decide<Result>(_ event: (inout DownloadMachine, UInt64) -> Result) -> Result {
    let now = Monotonic.now()
    return machine.withLock { event(&$0, now) }
  }

  func perform(_ actions: [DownloadAction]) {
    for action in actions {
      switch action {
      case .startTransfer(let id, let plan): start(id, plan)
      case .cancelTransfers(let ids): cancelTransfers(ids)
      case .commit(let state, let length):
        files.withLock { $0.target }?.io.commit(state, truncatingTo: length) { [self] error in
          handle { $0.checkpointFailed(error, now: $1) }
        }
      case .checkpoint(let state, let then):
        checkpoint(state, then: then)
      case .restartHashing(let announced):
        let algorithms = hashAlgorithms(announced: announced)
        files.withLock { files in
          files.hasher = files.target.map { PrefixHasher(part: $0.part, algorithms: algorithms) }
        }
      case .advanceHashing(let end):
        files.withLock { $0.hasher }?.advance(to: end)
      case .announceStart(let resumedFrom, let total, let finalURL):
        guard let paths = files.withLock({ $0.paths }) else { break }
        // A file, said so: without `isDirectory`, Foundation would look at the path to find out.
        emit(
          .started(
            DownloadStart(
              file: URL(fileURLWithPath: paths.target, isDirectory: false), finalURL: finalURL,
              resumedFrom: resumedFrom, totalBytes: total)))
      case .emit(let event):
        emit(event)
      case .scheduleRetry(let delay, let token):
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, delay)) { [self] in
          handle { $0.retryDelayOver(token: token, now: $1) }
        }
      case .end(let outcome):
        end(outcome)
      }
    }
  }

  private func checkpoint(_ state: ResumeState, then: DownloadEvent?) {
    // Files no response has named yet hold nothing to record.
    guard let target = files.withLock({ $0.prepared == nil ? $0.target : nil }) else {
      if let then { emit(then) }
      return
    }
    target.io.checkpoint(state) { [self] result in
      switch result {
      case .success(let nanoseconds):
        handle { machine, _ in machine.checkpointDone(nanoseconds: nanoseconds) }
        if let then { emit(then) }
      case .failure(let error):
        handle { $0.checkpointFailed(error, now: $1) }
      }
    }
  }

  private func start(_ id: TransferID, _ plan: TransferPlan) {
    // The held bytes the response must repeat are read first, on the lane (never here: this
    // may be the event thread).
    guard plan.overlap > 0, let target = files.withLock({ $0.target }) else {
      return start(id, plan, held: [])
    }
    target.io.read(at: plan.offset, count: Int(plan.overlap)) { [self] held in start(id, plan, held: held) }
  }

  private func start(_ id: TransferID, _ plan: TransferPlan, held: [UInt8]) {
    let request = TransferRequest(
      url: url, headers: options.headers + plan.headers, userAgent: options.userAgent,
      rateLimiters: rateLimiters, stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS,
      tls: options.tls, network: options.network,
      receiveBufferSize: RateLimiter.receiveBufferSize(plan.bufferSize, under: rateLimiters))
    let sink = ConnectionSink(run: self, id: id, plan: plan, held: held)
    let handle = transport.start(request, sink: sink)
    sink.attach(handle)
    let cancelNow = handles.withLock { handles -> Bool in
      guard handles.cancelledEarly.remove(id) == nil else { return true }
      handles.running[id] = handle
      return false
    }
    if cancelNow { handle.cancel() }
  }

  private func cancelTransfers(_ ids: [TransferID]) {
    let running: [any TransferHandle] = handles.withLock { handles in
      ids.compactMap { id in
        guard let handle = handles.running[id] else {
          handles.cancelledEarly.insert(id)
          return nil
        }
        return handle
      }
    }
    for handle in running { handle.cancel() }
  }

  /// The transport is done with a transfer (its sink finished).
  func forget(_ id: TransferID) {
    handles.withLock { handles in
      handles.running[id] = nil
      handles.cancelledEarly.remove(id)
    }
  }

  /// The facts of a response head the machine decides on.
  func facts(_ head: ResponseHead, checkable: ByteRange?) -> ResponseFacts {
    let summary = ResponseSummary(head)
    var free: Int64?
    if (200..<300).contains(summary.status), summary.identity.totalBytes != nil {
      let directory: String? =
        switch destination {
        case .file: files.withLock { $0.paths?.directory }
        case .directory(let directory): files.withLock { $0.paths?.directory } ?? directory.path
        }
      free = directory.flatMap(freeSpace(in:))
    }
    return ResponseFacts(
      summary: summary, finalURL: RequestURL.withoutPassword(head.finalURL),
      suggestedName: ResponseFacts.suggestedName(head, requestURL: url, fallback: options.fallbackFileName),
      wholeFileDigests: Dictionary(
        uniqueKeysWithValues: ServerDigests.wholeFile(head).map { ($0.key.rawValue, $0.value) }),
      acceptsRanges: head.headers["Accept-Ranges"]?.lowercased().contains("bytes") ?? false,
      sendsContentDigest: head.headers["Content-Digest"] != nil, checkableRange: checkable, freeSpace: free,
      unixTime: Int64(Date().timeIntervalSince1970))
  }

  /// A response named the target (a directory destination): open it and decide again.
  func nameTarget(_ name: String, for id: TransferID, facts: ResponseFacts) -> HeadReply {
    guard case .directory(let directory) = destination else {
      let actions = decide { $0.fail(HaulError(.generic, "no file to write to"), now: $1) }
      return .decided(.abort, checksRange: false, actions)
    }
    discardPrepared()
    do throws(HaulError) {
      // `resolveStart` checked the directory before the request.
      let start = try open(DownloadPaths(directory: directory.path, name: name), directoryChecked: true)
      var facts = facts
      if let directory = files.withLock({ $0.paths?.directory }) {
        facts.freeSpace = facts.freeSpace ?? freeSpace(in: directory)
      }
      return decide { $0.targetNamed(id, start, facts, now: $1) }
    } catch {
      return .decided(.abort, checksRange: false, decide { $0.fail(error, now: $1) })
    }
  }
}

extension DownloadRun {
  /// `--continue` with another tool's partial at the target: it becomes the `.part` file (the
  /// same rules as a reused `.part`: a regular file of this user with one link), and the first
  /// request proves its bytes are the server's before any is added.
  func adoptTarget(_ paths: DownloadPaths) throws(HaulError) {
    do { _ = try SafeFile.check(paths.target) } catch { throw error.haulError }
    do {
      try FileIO.rename(paths.target, to: paths.part)
    } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: paths.target), underlying: error)
    }
    FileIO.syncDirectory(paths.directory)
  }
}
