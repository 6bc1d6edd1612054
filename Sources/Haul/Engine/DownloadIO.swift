import CFileSystem
import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One download's file work, off the event thread and in order: block writes (`BlockStager`),
/// commits of a new version, checkpoints (sync the data, then save a state that covers only
/// bytes written before that sync). Two serial queues per download, each served by a thread of
/// its own, so the syncs of different downloads overlap:
/// - `queue`, the lane: writes, reads, commits, and the start of each checkpoint, in the order
///   asked for.
/// - `syncs`: a checkpoint's sync and state, handed over when the lane reaches it, so the writes
///   after it go on while the disk flushes (a flush takes as long as the bytes since the last
///   one need to reach the disk: 73 ms on average for 50 MiB here, which the writes had waited
///   for). The sync covers every write the lane finished before it, hence every byte the state
///   claims. Checkpoints land in order; a commit waits for the one in flight, so an older state
///   never replaces a newer one.
final class DownloadIO: Sendable {
  let part: PartFile
  let statePath: String
  private let queue = DispatchQueue(label: "haul.io")
  private let syncs = DispatchQueue(label: "haul.io.sync")
  /// Set once the download's files are finished or removed: no state file may appear again.
  private let stopped = Locked(false)
  /// A state file may be at `statePath`: one was there when the download started, or this lane
  /// saved one. Only the holder of the `.part` file's lock writes it, so while this is false
  /// there is none, and nothing need look for one.
  private let stateFileMayExist: Locked<Bool>

  /// `stateFileSeen`: false when the download's start found no state file (`DownloadRun.open`).
  init(part: PartFile, statePath: String, stateFileSeen: Bool = true) {
    self.part = part
    self.statePath = statePath
    self.stateFileMayExist = Locked(stateFileSeen)
    queue.setSpecific(key: Self.lane, value: ObjectIdentifier(self))
  }

  /// Whether a state file may be there to remove (after `stop`, no more appear).
  var mayHaveStateFile: Bool { stateFileMayExist.withLock { $0 } }

  /// Marks each lane's queue with its `DownloadIO`, so that a wait for the lane asked on the
  /// lane itself (a download's end concluded there) runs at once instead of deadlocking.
  private static let lane = DispatchSpecificKey<ObjectIdentifier>()

  /// Whether the caller runs on this lane: everything queued before the running job is done.
  private var onLane: Bool { DispatchQueue.getSpecific(key: Self.lane) == ObjectIdentifier(self) }

  /// `work` after the queued work: at once on the lane (the queue is already there), else
  /// waiting for the queue.
  private func afterQueued<T>(_ work: () -> T) -> T { onLane ? work() : queue.sync(execute: work) }

  /// Runs `work` after everything asked for before it.
  func async(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

  /// Records `state` after the work queued before it, truncating the data first when asked
  /// (a fresh version, a restart): writes queued after it land after it.
  func commit(
    _ state: ResumeState, truncatingTo length: Int64?, failed: @escaping @Sendable (HaulError) -> Void
  ) {
    queue.async { [self] in
      syncs.sync {}
      do throws(HaulError) { try persist(state, truncatingTo: length, sync: false) } catch { failed(error) }
    }
  }

  /// Reads `count` held bytes at `offset` after the work queued before it (so after the writes
  /// that made them held); `done` gets them, fewer when the file is shorter or unreadable (a
  /// comparison with them then fails, which is safe).
  func read(at offset: Int64, count: Int, done: @escaping @Sendable ([UInt8]) -> Void) {
    queue.async { [part] in
      var bytes = [UInt8](repeating: 0, count: count)
      var filled = 0
      while filled < count {
        let got: Int? = bytes.withUnsafeMutableBytes { buffer in
          let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])
          do throws(SystemError) { return try part.read(into: rest, at: offset + Int64(filled)) } catch {
            return nil
          }
        }
        guard let got, got > 0 else { break }
        filled += got
      }
      done(Array(bytes.prefix(filled)))
    }
  }

  /// Syncs the data and records `state`; `done` gets how long it took from this call, with the
  /// writes queued before it (what durable progress lags by), or the error.
  func checkpoint(_ state: ResumeState, done: @escaping @Sendable (Result<UInt64, HaulError>) -> Void) {
    let started = Monotonic.now()
    queue.async { [self] in
      syncs.async { [self] in
        do throws(HaulError) {
          try persist(state, truncatingTo: nil, sync: true)
          done(.success(Monotonic.now() &- started))
        } catch {
          done(.failure(error))
        }
      }
    }
  }

  /// `commit` or `checkpoint` now, on the caller's thread (or the lane), after the queued work:
  /// at the start and the end of a download, never on the event thread.
  func commitNow(_ state: ResumeState, truncatingTo length: Int64? = nil) throws(HaulError) {
    let result: Result<Void, HaulError> = afterQueued {
      syncs.sync {}
      do throws(HaulError) {
        try persist(state, truncatingTo: length, sync: true)
        return .success(())
      } catch {
        return .failure(error)
      }
    }
    try result.get()
  }

  /// Waits for the queued work.
  func drain() {
    afterQueued {}
    syncs.sync {}
  }

  /// Waits for the queued work and refuses every later state write; call before the state
  /// file is removed, so a late checkpoint cannot bring it back.
  func stop() {
    stopped.withLock { $0 = true }
    drain()
  }

  /// On `queue`, or on `syncs` for a checkpoint. `sync`: make the data durable first (a state never claims unsynced bytes).
  private func persist(_ state: ResumeState, truncatingTo length: Int64?, sync: Bool) throws(HaulError) {
    guard !stopped.withLock({ $0 }) else { return }
    do {
      if let length { try part.truncate(to: length) }
      if sync, state.heldBytes > 0 { try part.sync() }
    } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: part.path), underlying: error)
    }
    // A new version that holds nothing yet, with no state file to replace: the `.part` file
    // carries it (an extended attribute, no file, no sync), and the state file appears with
    // the first checkpoint. Written before any byte, the mark is on disk whenever the bytes'
    // size is (the file system orders its metadata), so a crash never leaves a `.part` with
    // bytes that nothing says are Haul's. Short downloads thus never create a state file.
    if !sync, state.heldBytes == 0, length == 0, !mayHaveStateFile || !FileIO.exists(statePath),
      part.setAttribute(FinishedFileRecord.attribute, StateJournal.encode(state))
    {
      return
    }
    // Before the save: one that fails after its rename still leaves a file.
    stateFileMayExist.withLock { $0 = true }
    try StateJournal.save(state, to: statePath)
  }

  /// The URL a `.part` file's mark names (see `persist`), if it has one.
  static func owner(ofPart path: String) -> String? {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    let count = buffer.withUnsafeMutableBytes {
      getxattr(path, FinishedFileRecord.attribute, $0.baseAddress, $0.count)
    }
    guard count > 0, let state = try? StateJournal.decode(Array(buffer.prefix(count))) else { return nil }
    return state.url
  }
}

/// Words for file errors that tell the user what happened and where.
enum FileErrorText {
  static func describe(_ error: SystemError, path: String) -> String {
    switch error.errno {
    case ENOSPC: "the disk is full while writing \(path)"
    case EDQUOT: "the disk quota is exceeded while writing \(path)"
    case EACCES, EPERM: "permission denied for \(path)"
    case EROFS: "\(path) is on a read-only file system"
    case ENOENT: "\(path): no such file or directory"
    case EISDIR: "\(path) is a directory"
    default: "\(path): \(error)"
    }
  }
}
