#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A thread of the daemon's own that runs the tasks answering RPC requests (decoding, running
/// methods, encoding). Swift concurrency's shared threads are as many as the cores, and any code
/// in the process that blocks one (a library, a test) would stall every answer; the event loop's
/// thread must stay free for the network. Tasks prefer it with `Task(executorPreference:)`;
/// what they await elsewhere (the manager) runs where it runs, and they come back here.
///
/// Threads: `enqueue` from any thread; jobs run one at a time on the worker.
package final class WorkerExecutor: TaskExecutor, @unchecked Sendable {
  // The queue is guarded by `mutex`, beside it; `ready` wakes the worker.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let ready = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var jobs: [UnownedJob] = []

  /// The one worker of the process, started on first use; nil if the system had no thread to
  /// give (tasks then run on Swift's shared threads).
  package static let shared: WorkerExecutor? = {
    let executor = WorkerExecutor()
    return LoopThread.start { executor.work() } ? executor : nil
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
      while jobs.isEmpty { pthread_cond_wait(ready, mutex) }
      let batch = jobs
      jobs.removeAll(keepingCapacity: true)
      pthread_mutex_unlock(mutex)
      for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
  }
}
