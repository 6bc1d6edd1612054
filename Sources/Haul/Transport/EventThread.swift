#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A thread of its own for a loop that blocks for its whole life: libcurl's event loop here, the
/// daemon's event loop and RPC worker threads in HaulDaemon. A pthread, since Foundation's `Thread`
/// would load all of Foundation, and such a loop must not sit on a Dispatch worker (Swift
/// concurrency's tasks run on those).
package enum EventThread {
  private final class Body {
    let run: () -> Void
    init(run: @escaping () -> Void) { self.run = run }
  }

  /// Starts `run` on a new detached thread; false (errno set) if the system has no thread to give.
  package static func start(_ run: @escaping @Sendable () -> Void) -> Bool {
    let body = Unmanaged.passRetained(Body(run: run)).toOpaque()
    #if canImport(Glibc)
      var thread = pthread_t()
    #else
      var thread: pthread_t?
    #endif
    let created = pthread_create(
      &thread, nil,
      { raw in
        guard let raw else { return nil }
        Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
        return nil
      }, body)
    guard created == 0 else {
      Unmanaged<Body>.fromOpaque(body).release()
      // pthread_create returns its error rather than setting errno; callers report errno.
      errno = created
      return false
    }
    #if canImport(Glibc)
      pthread_detach(thread)
    #else
      if let thread { pthread_detach(thread) }
    #endif
    return true
  }
}
