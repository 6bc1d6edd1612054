import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Makes progress durable off the event thread: sync the `.part` data, then save a state that
/// covers only bytes written before that sync. Requests coalesce; only the newest state matters.
/// All state-file writes of a download go through this one serial queue, so they land in order.
final class Checkpointer: Sendable {
  private let part: PartFile
  private let statePath: String
  private let queue = DispatchQueue(label: "haul.checkpoint")

  private struct Pending {
    var state: ResumeState?
    var workerQueued = false
    var failure: HaulError?
    /// Set once the download's files are finished or removed: no state file may appear again.
    var stopped = false
    var lastSyncNanoseconds: UInt64 = 0
  }
  private let pending = Locked(Pending())

  init(part: PartFile, statePath: String) {
    self.part = part
    self.statePath = statePath
  }

  /// The first error a background checkpoint hit (disk full, …), if any.
  var failure: HaulError? { pending.withLock { $0.failure } }

  /// How long the last background checkpoint took to sync the data.
  var lastSyncNanoseconds: UInt64 { pending.withLock { $0.lastSyncNanoseconds } }

  /// Records `state` soon, without blocking the caller. Every byte it claims must already be written.
  func schedule(_ state: ResumeState) {
    let startWorker = pending.withLock { box in
      guard !box.stopped else { return false }
      box.state = state
      guard !box.workerQueued else { return false }
      box.workerQueued = true
      return true
    }
    guard startWorker else { return }
    queue.async { [self] in
      while let state = takePending() {
        let started = Monotonic.now()
        do throws(HaulError) { try persist(state) } catch {
          pending.withLock { $0.failure = $0.failure ?? error }
        }
        let took = Monotonic.now() &- started
        pending.withLock { $0.lastSyncNanoseconds = took }
      }
    }
  }

  /// Records `state` now, after any queued checkpoint, optionally truncating the data first
  /// (a restart). Returns when the state is durable.
  func commit(_ state: ResumeState, truncatingTo length: Int64? = nil) throws(HaulError) {
    let result: Result<Void, HaulError> = queue.sync {
      pending.withLock { $0.state = nil }
      do throws(HaulError) {
        if let length {
          do { try part.truncate(to: length) } catch {
            throw HaulError(.fileSystem, "cannot truncate \(part.path): \(error)", underlying: error)
          }
        }
        try persist(state)
        return .success(())
      } catch {
        return .failure(error)
      }
    }
    try result.get()
  }

  /// Waits for a checkpoint in flight and refuses all later ones; call before the
  /// sidecar is removed, so a late checkpoint cannot bring it back.
  func stop() {
    pending.withLock {
      $0.stopped = true
      $0.state = nil
    }
    queue.sync {}
  }

  private func takePending() -> ResumeState? {
    pending.withLock { box in
      guard !box.stopped, let state = box.state else {
        box.workerQueued = false
        return nil
      }
      box.state = nil
      return state
    }
  }

  private func persist(_ state: ResumeState) throws(HaulError) {
    if state.heldBytes > 0 {
      do { try part.sync() } catch {
        throw HaulError(.fileSystem, FileErrorText.describe(error, path: part.path), underlying: error)
      }
    }
    try StateJournal.save(state, to: statePath)
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
