import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Threads of the daemon's own that run the tasks answering RPC requests (decoding, running
/// methods, encoding). Swift concurrency's shared threads are as many as the cores, and any code
/// in the process that blocks one (a library, a test) would stall every answer; the event loop's
/// thread must stay free for the network. A method may itself wait for the disk (the catalog
/// syncs every change), so there are a few workers: one slow answer does not hold up the others.
/// Tasks prefer them with `Task(executorPreference:)`; what they await elsewhere (the manager)
/// runs where it runs, and they come back here.
///
/// Threads: `enqueue` from any thread; each worker takes the oldest job and runs it.
package final class WorkerExecutor: TaskExecutor, @unchecked Sendable {
  /// Workers per process.
  static let threads = 4

  // `jobs[next...]` is the queue, guarded by `mutex`, beside it; `ready` wakes a worker.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let ready = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var jobs: [UnownedJob] = []
  private var next = 0

  /// The workers of the process, started on first use; nil if the system had no thread to
  /// give (tasks then run on Swift's shared threads).
  package static let shared: WorkerExecutor? = {
    let executor = WorkerExecutor()
    var started = 0
    for _ in 0..<threads where EventThread.start({ executor.work() }) { started += 1 }
    return started > 0 ? executor : nil
  }()

  private init() {
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(ready, nil)
  }

  package func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    pthread_mutex_lock(mutex)
    jobs.append(unowned)
    pthread_cond_signal(ready)
    pthread_mutex_unlock(mutex)
  }

  private func work() {
    while true {
      pthread_mutex_lock(mutex)
      while next == jobs.count { pthread_cond_wait(ready, mutex) }
      let job = jobs[next]
      next += 1
      if next == jobs.count {
        jobs.removeAll(keepingCapacity: true)
        next = 0
      }
      pthread_mutex_unlock(mutex)
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}
