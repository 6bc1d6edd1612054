import Foundation
import Synchronization

/// How one attempt ended, as the retry loop sees it.
enum AttemptOutcome: Sendable {
  /// Every byte is in the `.part` file.
  case completed
  /// The file at the target was already complete; `changed` when the server now has another version.
  case alreadyComplete(changed: Bool)
  /// The response could not be used safely; start over from byte 0.
  case restart(reason: String)
  /// A transient failure; try again after a delay.
  case transient(HaulError, retryAfter: Double?)
  /// A failure that retrying will not fix.
  case failed(HaulError)
  /// Stopped by pause or cancel.
  case stopped
}

/// What one attempt asks for.
struct AttemptPlan: Sendable {
  enum Purpose: Sendable {
    /// Fetch bytes from `offset` on (0: the whole resource).
    case download(offset: Int64)
    /// Ask whether a finished file is still the server's version, fetching nothing if so.
    case checkFinished(record: ResumeState)
  }
  var purpose: Purpose

  var offset: Int64 {
    switch purpose {
    case .download(let offset): offset
    case .checkFinished(let record): record.totalBytes ?? 0
    }
  }
}

/// One `Download.run()`: resolves the files, runs attempts until the file is complete or a
/// failure is final, and keeps the state durable on the way. Body bytes arrive on the transport's
/// event thread; the retry loop runs in the caller's task; shared fields sit in one lock.
final class DownloadRun: Sendable {
  let url: String
  let destination: DownloadDestination
  let options: DownloadOptions
  let transport: any Transport
  let control: DownloadControl
  let emit: @Sendable (DownloadEvent) -> Void
  let rateLimiter: RateLimiter?

  /// The open `.part` file of a chosen target, with its checkpointer.
  struct OpenTarget: Sendable {
    let paths: DownloadPaths
    let part: PartFile
    let checkpointer: Checkpointer
  }

  private struct Shared {
    var paths: DownloadPaths?
    var target: OpenTarget?
    var state: ResumeState
    /// Next byte to write in the current attempt.
    var writeOffset: Int64 = 0
    /// Bytes held when this session started.
    var resumedFrom: Int64?
    var finalURL: String?
    /// Bytes received over the network in this session.
    var received: Int64 = 0
    /// Bytes received in the current attempt.
    var attemptReceived: Int64 = 0
    var lastCheckpoint: UInt64 = 0
    var lastProgress: UInt64 = 0
    var speed = SpeedMeter()
  }
  private let shared: Mutex<Shared>

  init(
    url: String, destination: DownloadDestination, options: DownloadOptions, transport: any Transport,
    control: DownloadControl, emit: @escaping @Sendable (DownloadEvent) -> Void
  ) {
    self.url = url
    self.destination = destination
    self.options = options
    self.transport = transport
    self.control = control
    self.emit = emit
    self.rateLimiter = options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
    self.shared = Mutex(Shared(state: ResumeState(url: url)))
  }

  // MARK: - The retry loop

  func execute() async throws(HaulError) -> DownloadResult {
    let started = Monotonic.now()
    var plan = try resolveStart()
    let policy = RetryPolicy(
      baseDelay: options.retryBaseDelay, maxDelay: options.maxRetryDelay,
      maxAttemptsWithoutProgress: max(1, options.maxAttemptsWithoutProgress))
    var failures = 0
    var restarts = 0
    while true {
      try await stopIfRequested()
      let outcome = await attempt(plan)
      let progressed = shared.withLock { $0.attemptReceived > 0 }
      if progressed { failures = 0 }
      switch outcome {
      case .completed:
        return try finish(started: started)
      case .alreadyComplete(let changed):
        return try alreadyComplete(plan: plan, changed: changed, started: started)
      case .restart(let reason):
        restarts += 1
        guard restarts <= 5 else {
          throw HaulError(
            .protocol, "the server's responses are inconsistent: \(reason)",
            hint: "the server may not support resuming; try again later")
        }
        emit(.restarted(reason: reason))
        try resetToEmpty()
        plan = AttemptPlan(purpose: .download(offset: 0))
      case .transient(let error, let retryAfter):
        try flushCheckpoint()
        failures += 1
        guard policy.allowsAnotherAttempt(afterFailures: failures) else {
          throw HaulError(
            error.category, "\(error.message) (gave up after \(failures) attempts without progress)",
            hint: "run the same command again later to resume from \(bytesText(held()))",
            underlying: error)
        }
        let delay = policy.delay(
          afterFailures: failures, retryAfter: retryAfter, jitter: Double.random(in: 0...1))
        emit(
          .retrying(
            RetryNotice(attempt: failures, maxAttempts: policy.maxAttemptsWithoutProgress, delay: delay, reason: error)))
        await control.sleep(seconds: delay)
        plan = AttemptPlan(purpose: .download(offset: held()))
      case .failed(let error):
        try? flushCheckpoint()
        removeIfEmpty()
        throw error
      case .stopped:
        try flushCheckpoint()
        if case .pause = control.request {
          emit(.paused(progressSnapshot(connections: 0)))
          await control.waitWhilePaused()
          if control.request == .run { emit(.resumed) }
        }
        if case .download = plan.purpose { plan = AttemptPlan(purpose: .download(offset: held())) }
      }
    }
  }

  private func stopIfRequested() async throws(HaulError) {
    await control.waitWhilePaused()
    guard case .cancel(let keepPartial) = control.request else { return }
    try? flushCheckpoint()
    if keepPartial {
      let paths = shared.withLock { $0.paths }
      throw HaulError(
        .interrupted, "stopped; \(bytesText(held())) saved",
        hint: paths.map { _ in "run the same command again to resume" })
    }
    discardPartial()
    throw HaulError(.interrupted, "cancelled; the partial download was discarded")
  }

  private func held() -> Int64 { shared.withLock { $0.state.contiguousBytes } }

  // MARK: - Choosing the files

  /// Finds the target when it is known before any response, opens and locks its files, and
  /// returns the first attempt: a resume, a fresh start, or a check of a finished file.
  private func resolveStart() throws(HaulError) -> AttemptPlan {
    let paths: DownloadPaths?
    switch destination {
    case .file(let file):
      paths = DownloadPaths(target: file.path)
    case .directory(let directory):
      guard FileIO.isDirectory(directory.path) else {
        throw HaulError(.fileSystem, "the directory \(directory.path) does not exist")
      }
      paths = knownTarget(in: directory.path)
    }
    guard let paths else { return AttemptPlan(purpose: .download(offset: 0)) }
    return try open(paths)
  }

  /// In a directory: an interrupted download of this URL, or a finished file from it under the URL's name.
  private func knownTarget(in directory: String) -> DownloadPaths? {
    for statePath in DownloadPaths.stateFiles(in: directory) {
      if case .success(let state)? = try? StateJournal.load(from: statePath), state.url == url {
        return DownloadPaths(target: String(statePath.dropLast(".haul".count)))
      }
    }
    let name = FileNameSanitizer.name(fromURL: url) ?? "index.html"
    let candidate = DownloadPaths(directory: directory, name: name)
    if let record = FinishedFileRecord.read(at: candidate.target), record.url == url { return candidate }
    return nil
  }

  /// Opens the target's files and decides the first attempt. Also runs on the event thread
  /// when the name comes from a response (`Content-Disposition`).
  private func open(_ paths: DownloadPaths) throws(HaulError) -> AttemptPlan {
    guard FileIO.isDirectory(paths.directory) else {
      throw HaulError(.fileSystem, "the directory \(paths.directory) does not exist")
    }
    if FileIO.isDirectory(paths.target) {
      throw HaulError(.fileSystem, "\(paths.target) is a directory", hint: "choose a file name with -o")
    }
    let record = FinishedFileRecord.read(at: paths.target).flatMap { $0.url == url ? $0 : nil }
    if let record, !FileIO.exists(paths.part) {
      try? FileIO.remove(paths.state)  // left over from a crash just after the final rename
      shared.withLock {
        $0.paths = paths
        $0.state = record
      }
      if options.overwrite { return try open(paths, discardingFinished: true) }
      return AttemptPlan(purpose: .checkFinished(record: record))
    }
    return try open(paths, discardingFinished: false)
  }

  private func open(_ paths: DownloadPaths, discardingFinished: Bool) throws(HaulError) -> AttemptPlan {
    if FileIO.exists(paths.target), !discardingFinished, !options.overwrite,
      FinishedFileRecord.read(at: paths.target)?.url != url
    {
      throw HaulError(
        .fileSystem, "\(paths.target) already exists and was not downloaded by haul from this URL",
        hint: "use --overwrite to replace it, or -o to choose another name")
    }
    let partExisted = FileIO.exists(paths.part)
    let part: PartFile
    do {
      part = try PartFile(path: paths.part)
    } catch {
      switch error {
      case .busy:
        throw HaulError(
          .generic, "another haul process is downloading \(paths.target)",
          hint: "wait for it to finish, or stop it first")
      case .system(let cause):
        throw HaulError(.fileSystem, FileErrorText.describe(cause, path: paths.part), underlying: cause)
      }
    }
    var state = ResumeState(url: url)
    var notice: String?
    switch try StateJournal.load(from: paths.state) {
    case .success(let saved)? where saved.url == url:
      state = saved
    case .success(let saved)?:
      guard options.overwrite else {
        throw HaulError(
          .fileSystem, "\(paths.part) belongs to another download (\(saved.url))",
          hint: "use --overwrite to replace it, or -o to choose another name")
      }
    case .failure(let problem)?:
      notice = "the saved state \(paths.state) was unusable (\(problem)); starting over"
    case nil:
      if partExisted, part.size() > 0, !options.overwrite {
        throw HaulError(
          .fileSystem, "\(paths.part) exists but was not made by haul",
          hint: "use --overwrite to replace it, or -o to choose another name")
      }
    }
    // Never trust more than the data file really holds (data lost after the last sync, or edited).
    let onDisk = part.size()
    if state.contiguousBytes > onDisk { state.setContiguous(onDisk) }
    if let total = state.totalBytes, state.contiguousBytes > total { state.setContiguous(0) }
    let target = OpenTarget(
      paths: paths, part: part, checkpointer: Checkpointer(part: part, statePath: paths.state))
    let offset = state.contiguousBytes
    let stateToCommit = state
    shared.withLock {
      $0.paths = paths
      $0.target = target
      $0.state = stateToCommit
      if $0.resumedFrom == nil { $0.resumedFrom = offset }
    }
    if let notice { emit(.restarted(reason: notice)) }
    try target.checkpointer.commit(state, truncatingTo: offset == 0 ? 0 : nil)
    FileIO.syncDirectory(paths.directory)
    return AttemptPlan(purpose: .download(offset: offset))
  }

  // MARK: - One attempt

  private func attempt(_ plan: AttemptPlan) async -> AttemptOutcome {
    var headers = options.headers
    let identity = shared.withLock { ResourceIdentity($0.state) }
    if plan.offset > 0 {
      headers.append(("Range", "bytes=\(plan.offset)-"))
      if let validator = identity.ifRangeValue { headers.append(("If-Range", validator)) }
    }
    let request = TransferRequest(
      url: url, headers: headers, userAgent: options.userAgent, rateLimiter: rateLimiter,
      stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS)
    shared.withLock {
      $0.attemptReceived = 0
      $0.writeOffset = plan.offset
    }
    return await withCheckedContinuation { continuation in
      let sink = AttemptSink(run: self, plan: plan) { continuation.resume(returning: $0) }
      let handle = transport.start(request, sink: sink)
      if control.attach(handle) == false { return }
    }
  }

  /// The head of the final response: decide where, if anywhere, its body goes.
  fileprivate func receiveHead(_ head: ResponseHead, plan: AttemptPlan) -> (BodyDisposition, AttemptOutcome?) {
    let response = ResponseSummary(head)
    do {
      if case .checkFinished(let record) = plan.purpose {
        let verdict = FinishedFileCheck.compare(
          recorded: ResourceIdentity(record), size: record.totalBytes ?? 0, response: response)
        switch verdict {
        case .unchanged: return (.abort, .alreadyComplete(changed: false))
        case .changed: return (.abort, .alreadyComplete(changed: true))
        case .undecided: break
        }
      }
      if shared.withLock({ $0.target == nil }), (200..<300).contains(response.status) {
        let name = chooseName(head)
        guard case .directory(let directory) = destination else { return (.abort, .failed(HaulError(.generic, "no target file"))) }
        let paths = DownloadPaths(directory: directory.path, name: name)
        if case .checkFinished(let record) = try open(paths).purpose {
          let verdict = FinishedFileCheck.compare(
            recorded: ResourceIdentity(record), size: record.totalBytes ?? 0, response: response)
          return (.abort, .alreadyComplete(changed: verdict != .unchanged))
        }
        // `open` found no partial for this name (else the URL scan would have): write from 0.
        if plan.offset != 0 { return (.abort, .restart(reason: "the file name changed")) }
      }
      let heldIdentity: ResourceIdentity? = shared.withLock {
        $0.state.contiguousBytes > 0 ? ResourceIdentity($0.state) : nil
      }
      switch RangeResponse.decide(offset: plan.offset, held: heldIdentity, response: response) {
      case .append(let offset):
        try begin(at: offset, response: response, head: head, replacing: false)
        return (.deliver, nil)
      case .replaceFromStart:
        emit(.restarted(reason: "the server sent the whole file (it changed, or does not resume)"))
        try begin(at: 0, response: response, head: head, replacing: true)
        return (.deliver, nil)
      case .alreadyComplete:
        return (.discard, .completed)
      case .restart(let reason):
        return (.abort, .restart(reason: reason))
      case .retry(let error, let retryAfter):
        return (.discard, .transient(error, retryAfter: retryAfter.map { Double($0.delay(now: Int64(Date().timeIntervalSince1970))) }))
      case .fail(let error):
        return (.abort, .failed(error))
      }
    } catch {
      return (.abort, .failed(error))
    }
  }

  private func chooseName(_ head: ResponseHead) -> String {
    if let header = head.headers["Content-Disposition"],
      let suggested = ContentDisposition.filename(fromHeaderValue: header),
      let name = FileNameSanitizer.sanitize(suggested)
    {
      return name
    }
    return FileNameSanitizer.name(fromURL: head.finalURL) ?? FileNameSanitizer.name(fromURL: url)
      ?? "index.html"
  }

  /// Accepts a response: records the version its bytes belong to, durably first when the bytes held are dropped.
  private func begin(at offset: Int64, response: ResponseSummary, head: ResponseHead, replacing: Bool) throws(HaulError) {
    let identity = response.identity
    let (target, fresh, state, resumedFrom): (OpenTarget?, Bool, ResumeState, Int64) = shared.withLock {
      let fresh = offset == 0
      if fresh {
        $0.state.totalBytes = identity.totalBytes
        $0.state.etag = identity.etag
        $0.state.lastModified = identity.lastModified
        $0.state.setContiguous(0)
        $0.resumedFrom = 0
      } else if $0.state.totalBytes == nil {
        $0.state.totalBytes = identity.totalBytes
      }
      $0.state.finalURL = head.finalURL
      $0.finalURL = head.finalURL
      $0.writeOffset = offset
      return ($0.target, fresh, $0.state, $0.resumedFrom ?? offset)
    }
    guard let target else { throw HaulError(.generic, "internal: no open file for the download") }
    if fresh { try target.checkpointer.commit(state, truncatingTo: 0) }
    emit(
      .started(
        DownloadStart(
          file: URL(fileURLWithPath: target.paths.target), finalURL: head.finalURL,
          resumedFrom: resumedFrom, totalBytes: state.totalBytes)))
  }

  /// Body bytes: write them where they belong, then account for them. Event thread only.
  fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> AttemptOutcome? {
    let (part, offset) = shared.withLock { ($0.target?.part, $0.writeOffset) }
    guard let part else { return .failed(HaulError(.generic, "internal: body without an open file")) }
    if let total = shared.withLock({ $0.state.totalBytes }), offset + Int64(bytes.count) > total {
      return .restart(reason: "the server sent more bytes than the file's size")
    }
    do {
      try part.write(bytes, at: offset)
    } catch {
      return .failed(HaulError(.fileSystem, FileErrorText.describe(error, path: part.path), underlying: error))
    }
    let now = Monotonic.now()
    let checkpointEvery = UInt64(options.checkpointInterval * 1e9)
    let progressEvery = UInt64(options.progressInterval * 1e9)
    let (checkpoint, progress): (ResumeState?, DownloadProgress?) = shared.withLock {
      let end = $0.writeOffset + Int64(bytes.count)
      $0.writeOffset = end
      $0.state.setContiguous(end)
      $0.received += Int64(bytes.count)
      $0.attemptReceived += Int64(bytes.count)
      var checkpoint: ResumeState?
      if now &- $0.lastCheckpoint >= checkpointEvery {
        $0.lastCheckpoint = now
        checkpoint = $0.state
      }
      var progress: DownloadProgress?
      if now &- $0.lastProgress >= progressEvery {
        $0.lastProgress = now
        $0.speed.record(bytes: $0.received, at: now)
        progress = DownloadProgress(
          bytes: end, totalBytes: $0.state.totalBytes, bytesPerSecond: $0.speed.bytesPerSecond, connections: 1)
      }
      return (checkpoint, progress)
    }
    if let checkpoint, let target = shared.withLock({ $0.target }) {
      if let failure = target.checkpointer.failure { return .failed(failure) }
      target.checkpointer.schedule(checkpoint)
    }
    if let progress { emit(.progress(progress)) }
    return nil
  }

  /// The transfer ended; `decided` is what the head or body already concluded.
  fileprivate func finishAttempt(decided: AttemptOutcome?, failure: TransportFailure?) -> AttemptOutcome {
    control.detach()
    if let decided { return decided }
    if let failure {
      if failure.kind == .cancelled { return .stopped }
      let error = Self.error(for: failure)
      switch failure.kind {
      case .connect, .interrupted, .timedOut, .other: return .transient(error, retryAfter: nil)
      default: return .failed(error)
      }
    }
    let (written, total) = shared.withLock { ($0.writeOffset, $0.state.totalBytes) }
    guard let total else {
      // No length was announced (chunked): the end of the response is the end of the file.
      shared.withLock { $0.state.totalBytes = written }
      return .completed
    }
    if written == total { return .completed }
    return .transient(
      HaulError(.network, "the connection ended after \(written) of \(total) bytes"), retryAfter: nil)
  }

  static func error(for failure: TransportFailure) -> HaulError {
    switch failure.kind {
    case .connect: HaulError(.network, "cannot connect: \(failure.message)", underlying: failure)
    case .interrupted: HaulError(.network, "the connection broke: \(failure.message)", underlying: failure)
    case .timedOut: HaulError(.network, "timed out: \(failure.message)", hint: "raise --timeout for slow servers", underlying: failure)
    case .tls:
      HaulError(
        .tls, "TLS failed: \(failure.message)",
        hint: "the server's certificate could not be verified; --insecure skips the check (unsafe)",
        underlying: failure)
    case .tooManyRedirects: HaulError(.protocol, "too many redirects: \(failure.message)", underlying: failure)
    case .badURL: HaulError(.invalidInput, "unusable URL: \(failure.message)", underlying: failure)
    case .malformedResponse: HaulError(.protocol, "the server's reply is not valid HTTP: \(failure.message)", underlying: failure)
    case .aborted, .cancelled, .other: HaulError(.network, failure.message, underlying: failure)
    }
  }

  // MARK: - Ends

  private func flushCheckpoint() throws(HaulError) {
    let (target, state) = shared.withLock { ($0.target, $0.state) }
    guard let target else { return }
    try target.checkpointer.commit(state)
  }

  private func resetToEmpty() throws(HaulError) {
    let (target, state): (OpenTarget?, ResumeState) = shared.withLock {
      $0.state = ResumeState(url: url)
      $0.writeOffset = 0
      return ($0.target, $0.state)
    }
    try target?.checkpointer.commit(state, truncatingTo: 0)
  }

  /// Sync, stamp, rename into place, drop the sidecar.
  private func finish(started: UInt64) throws(HaulError) -> DownloadResult {
    let (target, state, received, resumedFrom, finalURL) = shared.withLock {
      ($0.target, $0.state, $0.received, $0.resumedFrom ?? 0, $0.finalURL ?? $0.state.finalURL ?? url)
    }
    guard let target else { throw HaulError(.generic, "internal: finished without a file") }
    let total = state.totalBytes ?? state.contiguousBytes
    var finished = state
    finished.totalBytes = total
    finished.setContiguous(total)
    target.checkpointer.stop()
    do {
      try target.part.truncate(to: total)
      try target.part.sync()
      FinishedFileRecord.attach(finished, to: target.part)
      try FileIO.rename(target.paths.part, to: target.paths.target)
      try FileIO.remove(target.paths.state)
    } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: target.paths.target), underlying: error)
    }
    FileIO.syncDirectory(target.paths.directory)
    let result = DownloadResult(
      file: URL(fileURLWithPath: target.paths.target), totalBytes: total, bytesReceived: received,
      resumedFrom: resumedFrom, finalURL: finalURL, wasAlreadyComplete: false, remoteChanged: false,
      duration: Monotonic.seconds(since: started))
    emit(.progress(DownloadProgress(bytes: total, totalBytes: total, bytesPerSecond: shared.withLock { $0.speed.bytesPerSecond }, connections: 0)))
    emit(.completed(result))
    return result
  }

  private func alreadyComplete(plan: AttemptPlan, changed: Bool, started: UInt64) throws(HaulError) -> DownloadResult {
    let (paths, state) = shared.withLock { ($0.paths, $0.state) }
    guard let paths else { throw HaulError(.generic, "internal: no target") }
    if case .download = plan.purpose {
      // A 416 at the very end: the partial is the whole file.
      return try finish(started: started)
    }
    let total = state.totalBytes ?? 0
    let result = DownloadResult(
      file: URL(fileURLWithPath: paths.target), totalBytes: total, bytesReceived: 0, resumedFrom: total,
      finalURL: state.finalURL ?? url, wasAlreadyComplete: true, remoteChanged: changed,
      duration: Monotonic.seconds(since: started))
    removeIfEmpty()
    emit(.completed(result))
    return result
  }

  /// After a final failure with nothing held, leave no empty `.part` or sidecar behind.
  private func removeIfEmpty() {
    let (target, held) = shared.withLock { ($0.target, $0.state.heldBytes) }
    guard let target, held == 0 else { return }
    target.checkpointer.stop()
    try? FileIO.remove(target.paths.part)
    try? FileIO.remove(target.paths.state)
  }

  private func discardPartial() {
    guard let target = shared.withLock({ $0.target }) else { return }
    target.checkpointer.stop()
    try? FileIO.remove(target.paths.part)
    try? FileIO.remove(target.paths.state)
  }

  func progressSnapshot(connections: Int) -> DownloadProgress {
    shared.withLock {
      DownloadProgress(
        bytes: $0.state.contiguousBytes, totalBytes: $0.state.totalBytes,
        bytesPerSecond: $0.speed.bytesPerSecond, connections: connections)
    }
  }
}

/// Receives one attempt's transfer events and hands its outcome to the waiting retry loop once.
private final class AttemptSink: TransferSink {
  private let run: DownloadRun
  private let plan: AttemptPlan
  private let decided = Mutex<AttemptOutcome?>(nil)
  private let onFinish: @Sendable (AttemptOutcome) -> Void

  init(run: DownloadRun, plan: AttemptPlan, onFinish: @escaping @Sendable (AttemptOutcome) -> Void) {
    self.run = run
    self.plan = plan
    self.onFinish = onFinish
  }

  func transferDidReceiveHead(_ head: ResponseHead) -> BodyDisposition {
    let (disposition, outcome) = run.receiveHead(head, plan: plan)
    if let outcome { decided.withLock { $0 = outcome } }
    return disposition
  }

  func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let outcome = run.receiveBody(bytes) else { return true }
    decided.withLock { $0 = outcome }
    return false
  }

  func transferDidFinish(head: ResponseHead?, failure: TransportFailure?) {
    let outcome = run.finishAttempt(decided: decided.withLock { $0 }, failure: failure)
    onFinish(outcome)
  }
}

/// Receive speed over the last few seconds.
struct SpeedMeter: Sendable {
  private var samples: [(time: UInt64, bytes: Int64)] = []
  private(set) var bytesPerSecond: Double = 0

  mutating func record(bytes: Int64, at time: UInt64) {
    samples.append((time, bytes))
    let window: UInt64 = 3_000_000_000
    while let first = samples.first, time &- first.time > window, samples.count > 2 { samples.removeFirst() }
    guard let first = samples.first, time > first.time else { return }
    bytesPerSecond = Double(bytes - first.bytes) / (Double(time - first.time) / 1e9)
  }
}

/// Monotonic nanoseconds, cheap enough for the per-chunk path.
enum Monotonic {
  static func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
  }

  static func seconds(since start: UInt64) -> Double { Double(now() &- start) / 1e9 }
}

func bytesText(_ bytes: Int64) -> String { ByteQuantity.format(bytes) }
