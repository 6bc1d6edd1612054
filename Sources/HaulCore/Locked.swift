#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A value behind a lock, for state shared between threads.
///
/// Why not `Synchronization.Mutex`: on Linux it hands a contended lock over in the kernel,
/// which ThreadSanitizer cannot see, so every contended use reads as a data race and the
/// sanitizer run in CI would be noise. A pthread mutex it understands (and `NSLock`, the same
/// thing, would load all of Foundation).
/// Rules as for any lock here: no I/O and no continuation resumes inside `withLock`.
package final class Locked<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value: Value

  package init(_ value: Value) {
    self.value = value
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
