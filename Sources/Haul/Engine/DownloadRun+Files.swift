import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The open `.part` file of a chosen target, with its I/O lane.
struct OpenTarget: Sendable {
  let paths: DownloadPaths
  let part: PartFile
  let io: DownloadIO
  /// The `.part` or state file was there before this run: an earlier, killed run may have left
  /// temporary copies of the state beside them (this run's own commits never do).
  var inherited = false

  /// Removes the state file, after `io.stop()`; none ever seen or saved, none to remove.
  func removeStateFile() throws(SystemError) {
    guard io.mayHaveStateFile else { return }
    try StateJournal.remove(at: paths.state)
  }
}

/// The files of a run: finding and opening the target, finishing, verifying, cleaning up.
/// On the caller's task, except `open` for a target a response named (event thread, once).
extension DownloadRun {
  // MARK: - Choosing the files

  /// Finds the target when it is known before any response, opens and locks its files.
  func resolveStart() throws(HaulError) -> StartPoint {
    if let start = try openStream() { return start }
    switch destination {
    case .file(let file):
      return try open(DownloadPaths(target: file.path))
    case .directory(let directory):
      try UserFiles.requireWritableDirectory(directory.path)
      let named = DownloadPaths(
        directory: directory.path,
        name: FileNameSanitizer.directoryName(forURL: url, fallback: options.fallbackFileName))
      // One look answers both questions below. One that throws (a link at the `.part`, or at
      // the target) leaves them as they were without it: the response's open reports it.
      let seen = try? named.look(replacingTarget: false)
      if let paths = knownTarget(in: directory.path, named: named, seen: seen) {
        return try open(paths, directoryChecked: true)
      }
      if let seen { prepare(named, seen: seen) }
      return .unnamed
    }
  }

  /// In a directory: an interrupted download of this URL, or a finished file from it under the
  /// URL's name (`named`, as `seen` when it could be looked at).
  private func knownTarget(in directory: String, named: DownloadPaths, seen: DownloadPaths.Seen?)
    -> DownloadPaths?
  {
    for statePath in StateFileIndex.stateFiles(in: directory) {
      if case .success(let state)? = try? StateJournal.load(from: statePath), state.url == recordedURL {
        return DownloadPaths(target: String(statePath.dropLast(".haul".count)))
      }
    }
    let record =
      if let seen { FinishedFileRecord.read(at: named.target, seen: seen.target) } else {
        FinishedFileRecord.read(at: named.target)
      }
    if let record, record.url == recordedURL {
      return named
    }
    return nil
  }

  /// Opens a directory download's file under the URL's name before the request, when nothing is
  /// at its paths (the usual case): a response that names it then goes on at once on the event
  /// thread (`takePrepared`), instead of pausing its transfer while a thread of its own opens
  /// the file. Anything there, or a failure, leaves the open to the response. Until a response
  /// names it, it is not the target: no state is saved for it, and one named otherwise, or none,
  /// removes it.
  private func prepare(_ paths: DownloadPaths, seen: DownloadPaths.Seen) {
    guard seen.target == nil, seen.part == nil, seen.state == nil,
      let start = try? open(paths, seen: seen)
    else { return }
    files.withLock { $0.prepared = start }
  }

  /// Where the file `prepare` opened starts, when a response names it (once).
  func takePrepared(named name: String) -> StartPoint? {
    files.withLock { files in
      guard let start = files.prepared, files.paths?.name == name else { return nil }
      files.prepared = nil
      return start
    }
  }

  /// The file `prepare` opened, when a response named another one: removed, as it was made.
  func discardPrepared() {
    let target: OpenTarget? = files.withLock { files in
      guard files.prepared != nil else { return nil }
      defer {
        files.prepared = nil
        files.paths = nil
        files.target = nil
        files.hasher = nil  // cancels it
      }
      return files.target
    }
    guard let target else { return }
    target.io.stop()
    try? FileIO.remove(target.paths.part)
    target.part.unlock()
  }

  /// Opens the target's files (or finds its finished file) and says where the download starts.
  /// `directoryChecked`: this run's start checked the target's directory already (a directory
  /// destination): once is enough, a vanished one fails the create.
  func open(_ paths: DownloadPaths, directoryChecked: Bool = false) throws(HaulError) -> StartPoint {
    if !directoryChecked { try UserFiles.requireWritableDirectory(paths.directory) }
    return try open(paths, seen: try paths.look(replacingTarget: options.overwrite))
  }

  /// `open` once the paths were looked at.
  private func open(_ paths: DownloadPaths, seen: DownloadPaths.Seen) throws(HaulError) -> StartPoint {
    if seen.targetIsDirectory {
      throw HaulError(.fileSystem, "\(paths.target) is a directory", hint: LibraryWording.targetIsDirectory)
    }
    let finished = FinishedFileRecord.read(at: paths.target, seen: seen.target).flatMap {
      $0.url == recordedURL ? $0 : nil
    }
    var partExisted = seen.part != nil
    switch StartDecision.beforeOpening(
      target: paths.target, finished: finished, targetExists: seen.target != nil,
      partExists: partExisted, overwrite: options.overwrite, continuePartial: options.continuePartial)
    {
    case .adoptTarget:
      try adoptTarget(paths)
      files.withLock { $0.adoptedTarget = true }
      partExisted = true
    case .checkFinished(let record):
      let sha256 = try verifyFinished(paths.target, record: record)
      try? StateJournal.remove(at: paths.state)  // left over from a crash just after the final rename
      files.withLock {
        $0.paths = paths
        $0.finishedSHA256 = sha256
      }
      return .finished(record)
    case .refuse(let error):
      throw error
    case .openPart:
      break
    }
    let part: PartFile
    do {
      // An adopted target is at the `.part` path now: not what was seen there.
      let partSeen: SafeFile.Seen =
        partExisted != (seen.part != nil) ? .unknown : partExisted ? .reusable : .absent
      part = try PartFile(path: paths.part, seen: partSeen)
    } catch {
      switch error {
      case .busy(here: true):
        throw HaulError(
          .generic, "another download in this process is already writing \(paths.target)",
          hint: "let it finish, or give this one another file name", underlying: TargetInUse(here: true))
      case .busy(here: false):
        throw HaulError(
          .generic, "another haul process is downloading \(paths.target)",
          hint: "wait for it to finish, or stop it first", underlying: TargetInUse(here: false))
      case .system(let cause):
        throw HaulError(.fileSystem, FileErrorText.describe(cause, path: paths.part), underlying: cause)
      case .refused(let refusal):
        throw refusal.haulError
      }
    }
    // A state file is written only under the `.part` file's lock: none was there, and the
    // `.part` is new, so none belongs to it. Else it is read under the lock.
    let saved: StartDecision.SavedState
    switch seen.state == nil && part.created ? nil : try StateJournal.load(from: paths.state) {
    case .success(let state)?: saved = .loaded(state)
    case .failure?: saved = .unreadable
    case nil: saved = .none
    }
    let decision = StartDecision.afterOpening(
      url: recordedURL, part: paths.part, partExisted: partExisted, partSize: part.size(), saved: saved,
      partOwner: saved == .none && partExisted ? DownloadIO.owner(ofPart: paths.part) : nil,
      overwrite: options.overwrite, continuePartial: options.continuePartial)
    guard case .resume(let state, let truncate, let replaceState, let notice) = decision else {
      if case .refuse(let error) = decision { throw error }
      return .unnamed
    }
    let target = OpenTarget(
      paths: paths, part: part,
      io: DownloadIO(part: part, statePath: paths.state, stateFileSeen: seen.state != nil || saved != .none),
      inherited: partExisted || saved != .none)
    if let notice { emit(.restarted(reason: notice)) }
    if replaceState {
      try target.io.commitNow(state, truncatingTo: 0)
      FileIO.syncDirectory(paths.directory)
    } else if truncate {
      // Nothing else to record now: the first response's version is committed before its
      // first byte, and ranges are clamped to the file again at every open.
      do { try part.truncate(to: 0) } catch {
        throw HaulError(.fileSystem, FileErrorText.describe(error, path: paths.part), underlying: error)
      }
    }
    let hasher = PrefixHasher(part: part, algorithms: hashAlgorithms(announced: state.digests))
    files.withLock {
      $0.paths = paths
      $0.target = target
      $0.hasher = hasher
    }
    // Bytes without a saved state are another tool's partial, continued on request (`--continue`).
    return saved == .none && !state.ranges.isEmpty ? .foreignPartial(state) : .opened(state)
  }

  /// Bytes free for an unprivileged user on the file system of `directory`, if it can be told.
  func freeSpace(in directory: String) -> Int64? {
    // A stream takes no room on the file system its name is in (`/dev` for `/dev/null`).
    if files.withLock({ $0.target?.part.isStream }) == true { return nil }
    var info = statvfs()
    guard statvfs(directory, &info) == 0 else { return nil }
    let (bytes, overflow) = Int64(info.f_bavail).multipliedReportingOverflow(by: Int64(info.f_frsize))
    return overflow ? .max : bytes
  }

  // MARK: - Ends

  /// Sync, verify, stamp, rename into place, drop the sidecar.
  func finish(_ state: ResumeState, _ summary: DownloadSummary, started: UInt64) throws(HaulError)
    -> DownloadResult
  {
    let (target, hasher) = files.withLock { ($0.target, $0.hasher) }
    guard let target, let hasher else {
      throw HaulError(.generic, "the download ended without a file to finish")
    }
    let total = state.totalBytes ?? state.contiguousBytes
    var finished = state
    finished.totalBytes = total
    finished.setContiguous(total)
    target.io.stop()
    let sha256: String?
    if target.part.isStream {
      // Written as it came: nothing to sync, rename or record.
      sha256 = try verify(hasher, total: total, announced: state.digests ?? [:])
    } else {
      sha256 = try finishFile(target, hasher, finished, total: total)
    }
    let result = DownloadResult(
      file: URL(fileURLWithPath: target.paths.target, isDirectory: false), totalBytes: total,
      bytesReceived: summary.received, resumedFrom: summary.resumedFrom, finalURL: summary.finalURL,
      wasAlreadyComplete: false,
      remoteChanged: false, duration: Monotonic.seconds(since: started), sha256: sha256)
    emit(
      .progress(
        DownloadProgress(
          bytes: total, totalBytes: total, bytesPerSecond: summary.bytesPerSecond, connections: 0)))
    emit(.completed(result))
    return result
  }

  /// The file's end: its bytes durable and verified, then renamed into place and sealed.
  private func finishFile(_ target: OpenTarget, _ hasher: PrefixHasher, _ finished: ResumeState, total: Int64)
    throws(HaulError) -> String?
  {
    do {
      try target.part.truncate(to: total)
      try target.part.sync()
    } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: target.paths.part), underlying: error)
    }
    let sha256 = try verify(hasher, total: total, announced: finished.digests ?? [:])
    do {
      if options.remoteTime, let time = finished.lastModified.flatMap(HTTPDate.parse) {
        try target.part.setTimes(unixTime: time)
      }
      FinishedFileRecord.attach(finished, to: target.part)
      try FileIO.rename(target.paths.part, to: target.paths.target)
      // After the rename, which changes the file's status time: a rerun compares it.
      FinishedFileRecord.seal(target.part, sha256: sha256)
      try target.removeStateFile()
      // A directory scan: only where a killed run may have left some (many small files into
      // one directory would otherwise each read the whole directory).
      if target.inherited { SafeFile.removeLeftoverTemporaries(beside: target.paths.state) }
    } catch {
      throw HaulError(
        .fileSystem, FileErrorText.describe(error, path: target.paths.target), underlying: error)
    }
    FileIO.syncDirectory(target.paths.directory)
    return sha256
  }

  func alreadyComplete(changed: Bool, notChecked: String?, _ state: ResumeState, started: UInt64)
    throws(HaulError)
    -> DownloadResult
  {
    let (paths, sha256) = files.withLock { ($0.paths, $0.finishedSHA256) }
    guard let paths else {
      throw HaulError(.generic, "the download ended without a file")
    }
    let total = state.totalBytes ?? 0
    if options.remoteTime, !changed, notChecked == nil, let time = state.lastModified.flatMap(HTTPDate.parse)
    {
      try giveServerTime(time, to: paths.target, sha256: sha256)
    }
    let result = DownloadResult(
      file: URL(fileURLWithPath: paths.target, isDirectory: false), totalBytes: total, bytesReceived: 0,
      resumedFrom: total, finalURL: state.finalURL ?? recordedURL, wasAlreadyComplete: true,
      remoteChanged: changed,
      duration: Monotonic.seconds(since: started), sha256: sha256, serverNotChecked: notChecked)
    removeIfEmpty(held: 0)
    emit(.completed(result))
    return result
  }

  /// `DownloadOptions.remoteTime` on a rerun of a file finished without it: the server's time
  /// (its copy is the same), then a new seal, since the change moved the file's times (the
  /// next rerun then trusts it without hashing it).
  private func giveServerTime(_ time: Int64, to path: String, sha256: String?) throws(HaulError) {
    let file: FinishedFile
    do throws(LocalFileError) { file = try FinishedFile(path: path) } catch { throw error.haulError }
    guard file.status.modified != time * 1_000_000_000 else { return }
    do throws(SystemError) { try file.setTimes(unixTime: time) } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: path), underlying: error)
    }
    file.reseal(sha256: sha256 ?? file.seal?.sha256)
  }

  /// After a stop or failure: what is held becomes durable; nothing held leaves no files behind.
  func keep(_ state: ResumeState) {
    guard let target = files.withLock({ $0.target }) else { return }
    target.io.drain()
    guard state.heldBytes > 0 else { return removeIfEmpty(held: 0) }
    try? target.io.commitNow(state)
  }

  /// A partial Haul did not make, whose bytes the server did not prove (`UnprovenPartial`): no
  /// state claims them, and one that was at the target gets its name back.
  func leaveUnproven() {
    let (target, adopted) = files.withLock { ($0.target, $0.adoptedTarget) }
    guard let target else { return }
    target.io.drain()
    target.io.stop()
    try? target.removeStateFile()
    if adopted, !FileIO.exists(target.paths.target) {
      try? FileIO.rename(target.paths.part, to: target.paths.target)
    }
    FileIO.syncDirectory(target.paths.directory)
  }

  /// The run's end lets go of its files: no state write after it, and the lock is free for the
  /// next run of the same download at once. Not at the last reference to the file, which can
  /// outlive the run by moments (the transport's thread still holding a finished transfer's
  /// sink, a lane finishing the job that reported the end): a fresh URL's run, or the user's
  /// rerun, would find the `.part` "busy" meanwhile.
  func releaseTarget() {
    guard let target = files.withLock({ $0.target }) else { return }
    target.io.stop()
    target.part.unlock()
  }

  /// With nothing held, leave no empty `.part` or state file behind.
  func removeIfEmpty(held: Int64) {
    guard held == 0, let target = files.withLock({ $0.target }) else { return }
    target.io.stop()
    guard !target.part.isStream else { return }  // No files of its own; never the target.
    try? FileIO.remove(target.paths.part)
    try? target.removeStateFile()
  }

  func discardPartial() {
    guard let target = files.withLock({ $0.target }) else { return }
    target.io.stop()
    guard !target.part.isStream else { return }
    try? FileIO.remove(target.paths.part)
    try? target.removeStateFile()
  }

  // MARK: - Verification

  /// What to hash while the bytes arrive: SHA-256 (unless turned off), the expected checksum's
  /// algorithm, the server's.
  func hashAlgorithms(announced: [String: String]?) -> Set<Checksum.Algorithm> {
    var algorithms: Set<Checksum.Algorithm> = options.computeSHA256 ? [.sha256] : []
    if let checksum = options.checksum { algorithms.insert(checksum.algorithm) }
    for name in (announced ?? [:]).keys {
      if let algorithm = Checksum.Algorithm(rawValue: name) { algorithms.insert(algorithm) }
    }
    return algorithms
  }

  /// Checks the finished bytes against the expected checksum and the server's digests; on a
  /// mismatch the data is discarded (a rerun starts clean) and nothing appears at the target.
  /// Returns the SHA-256 when it was computed.
  private func verify(
    _ hasher: PrefixHasher, total: Int64, announced: [String: String]
  ) throws(HaulError) -> String? {
    let digests = try hasher.finish(total: total, algorithms: hashAlgorithms(announced: announced))
    for check in expectedDigests(announced: announced) where digests[check.algorithm] != check.hex {
      discardPartial()
      let streamed = files.withLock { $0.target?.part.isStream } == true
      throw HaulError(
        .integrity,
        "\(check.algorithm.rawValue) mismatch: \(check.source) is \(check.hex), the download has "
          + (digests[check.algorithm] ?? "none"),
        hint: streamed
          ? "its bytes were written out as they came: do not trust them"
          : "the corrupt download was discarded; " + LibraryWording.runAgainToFetchAnew)
    }
    return digests[.sha256]
  }
}
