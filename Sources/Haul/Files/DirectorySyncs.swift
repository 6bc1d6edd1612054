import Dispatch

/// Directory syncs shared by the callers that need one at the same time (group commit). A name
/// is durable once a sync of its directory that began after the rename has ended, so one sync
/// serves every caller that came before it began: sixteen downloads finishing together in one
/// directory need two syncs, not sixteen. Callers block (a download's lane, `BlockingWork`, a
/// catalog writer; never the event thread).
final class DirectorySyncs: Sendable {
  /// The process's, over `fsync` (`FileIO.syncDirectory`).
  static let shared = DirectorySyncs(sync: FileIO.syncDirectoryNow)

  /// One caller that waits: woken when a sync that covers it ended, or to run the next one.
  private final class Waiter: Sendable {
    private let woken = DispatchSemaphore(value: 0)
    private let runs = Locked(false)

    /// Whether this caller runs the next sync (else one that covers it ended).
    func wait() -> Bool {
      woken.wait()
      return runs.withLock { $0 }
    }

    func wake(toRun: Bool) {
      runs.withLock { $0 = toRun }
      woken.signal()
    }
  }

  /// A directory with a sync running (idle ones are not kept).
  private struct Directory {
    /// Came before the running sync began: done when it ends.
    var covered: [Waiter] = []
    /// Came while it ran (maybe after their renames were already written by it, maybe not):
    /// they need the next one, which the first of them runs.
    var next: [Waiter] = []
  }

  private let running = Locked([String: Directory]())
  private let sync: @Sendable (String) -> Void

  init(sync: @escaping @Sendable (String) -> Void) { self.sync = sync }

  /// Callers waiting on `directory`'s syncs (for tests).
  func waiting(in directory: String) -> Int {
    running.withLock { running in running[directory].map { $0.covered.count + $0.next.count } ?? 0 }
  }

  /// Returns once a sync of `directory` that began after this call has ended.
  func syncDirectory(_ directory: String) {
    let waiter = Waiter()
    let runsNow = running.withLock { running in
      guard running[directory] != nil else {
        running[directory] = Directory()
        return true
      }
      running[directory]?.next.append(waiter)
      return false
    }
    guard runsNow || waiter.wait() else { return }
    sync(directory)
    // Those it covered are done; the first of those who came meanwhile runs the next.
    let (done, runner): ([Waiter], Waiter?) = running.withLock { running in
      guard var entry = running[directory] else { return ([], nil) }
      let done = entry.covered
      guard !entry.next.isEmpty else {
        running[directory] = nil
        return (done, nil)
      }
      let runner = entry.next.removeFirst()
      entry.covered = entry.next
      entry.next = []
      running[directory] = entry
      return (done, runner)
    }
    for waiter in done { waiter.wake(toRun: false) }
    runner?.wake(toRun: true)
  }
}
