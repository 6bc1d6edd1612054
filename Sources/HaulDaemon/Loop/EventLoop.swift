import CEvent
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One thread running one libevent base, and the way in from every other thread.
///
/// Threads: libevent runs without locks, so the base and everything attached to it (the HTTP
/// server, its connections, WebSocket sessions, timers) are touched on the loop thread only.
/// They live in `Context`, which is made on the loop thread and never leaves it. Other threads
/// hand work in with `execute`: a Sendable closure queued under a lock, then a byte on a pipe
/// the loop watches wakes it; on the loop thread the closure gets the context. (libevent's own
/// cross-thread wake-up needs libevent_pthreads, which a machine with only libevent-2.1-7 lacks.)
package final class EventLoop<Context: AnyObject>: Sendable {
  package typealias Work = @Sendable (Context) -> Void

  private struct Item: Sendable {
    let run: Work
    /// Called instead of `run` when the loop has stopped (so nobody waits forever).
    let dropped: (@Sendable () -> Void)?
  }

  private struct Inbox {
    var items: [Item] = []
    var closed = false
    /// Who waits in `waitUntilStopped`.
    var stopWaiters: [CheckedContinuation<Void, Never>] = []
  }

  private let inbox = Locked(Inbox())
  private let wakeWriteEnd: Int32

  private init(wakeWriteEnd: Int32) { self.wakeWriteEnd = wakeWriteEnd }

  deinit { close(wakeWriteEnd) }

  /// Starts the loop thread; `makeContext` runs on it first (binding sockets and the like), and
  /// its error, if any, comes back here with the thread already gone.
  package static func start(
    makeContext: @escaping @Sendable (LoopHandle, EventLoop) throws(HaulError) -> Context
  ) async throws(HaulError) -> EventLoop {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw .system("cannot create the event loop's wake-up pipe", call: "pipe") }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
    _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
    let loop = EventLoop(wakeWriteEnd: ends[1])
    let readEnd = ends[0]
    let result: Result<Void, HaulError> = await withCheckedContinuation { started in
      let launched = EventThread.start {
        loop.run(readEnd: readEnd, makeContext: makeContext) { started.resume(returning: $0) }
      }
      if !launched {
        close(readEnd)
        started.resume(
          returning: .failure(.system("cannot start the event loop's thread", call: "pthread_create")))
      }
    }
    try result.get()
    return loop
  }

  /// Queues `work` for the loop thread; false (and `work` never runs) once the loop has stopped.
  @discardableResult
  package func execute(_ work: @escaping Work) -> Bool {
    enqueue(Item(run: work, dropped: nil))
  }

  /// Runs `body` on the loop thread and returns its result; nil when the loop has stopped.
  package func perform<T: Sendable>(_ body: @escaping @Sendable (Context) -> T) async -> T? {
    await withCheckedContinuation { continuation in
      let queued = enqueue(
        Item(
          run: { continuation.resume(returning: body($0)) }, dropped: { continuation.resume(returning: nil) })
      )
      if !queued { continuation.resume(returning: nil) }
    }
  }

  /// Returns once the loop thread has ended (at once if it has).
  package func waitUntilStopped() async {
    await withCheckedContinuation { continuation in
      let stopped = inbox.withLock { inbox in
        if !inbox.closed { inbox.stopWaiters.append(continuation) }
        return inbox.closed
      }
      if stopped { continuation.resume() }
    }
  }

  private func enqueue(_ item: Item) -> Bool {
    let wasEmpty: Bool? = inbox.withLock { inbox in
      guard !inbox.closed else { return nil }
      inbox.items.append(item)
      return inbox.items.count == 1
    }
    guard let wasEmpty else { return false }
    if wasEmpty {
      // A full pipe already holds a wake-up; the loop drains every item per wake-up anyway.
      var byte: UInt8 = 1
      _ = write(wakeWriteEnd, &byte, 1)
    }
    return true
  }

  // MARK: - On the loop thread

  private func run(
    readEnd: Int32, makeContext: (LoopHandle, EventLoop) throws(HaulError) -> Context,
    started: (Result<Void, HaulError>) -> Void
  ) {
    defer { close(readEnd) }
    guard let base = cevent_base_new() else {
      inbox.withLock { $0.closed = true }
      started(.failure(HaulError(.generic, "libevent could not create an event base")))
      return
    }
    defer { cevent_base_free(base) }
    let handle = LoopHandle(base: base)
    let context: Context
    do throws(HaulError) {
      context = try makeContext(handle, self)
    } catch {
      inbox.withLock { $0.closed = true }
      handle.runTeardown()
      started(.failure(error))
      return
    }
    let wake = LoopEvent(handle: handle, fd: readEnd, events: Int16(CEVENT_EV_READ | CEVENT_EV_PERSIST)) {
      [self] in
      var bytes = [UInt8](repeating: 0, count: 64)
      while read(readEnd, &bytes, bytes.count) > 0 {}
      let items = inbox.withLock { inbox in
        defer { inbox.items.removeAll() }
        return inbox.items
      }
      for item in items { item.run(context) }
    }
    guard let wake, wake.arm() else {
      let code = errno  // epoll_ctl's, which libevent leaves (EBADF would mean a descriptor closed twice)
      inbox.withLock { $0.closed = true }
      handle.runTeardown()
      started(
        .failure(
          .system("libevent could not watch the event loop's wake-up pipe", call: "event_add", errno: code)))
      return
    }
    started(.success(()))
    _ = cevent_base_run(base)
    // Stopped: nothing queued from now on runs; whoever waits on it hears so.
    handle.runTeardown()
    withExtendedLifetime(wake) {}
    withExtendedLifetime(context) {}
    let (left, waiters) = inbox.withLock { inbox in
      inbox.closed = true
      defer {
        inbox.items.removeAll()
        inbox.stopWaiters.removeAll()
      }
      return (inbox.items, inbox.stopWaiters)
    }
    for item in left { item.dropped?() }
    for waiter in waiters { waiter.resume() }
  }
}

/// What code on the loop thread uses: the base, and the way to stop.
package final class LoopHandle {
  package let base: OpaquePointer
  private var teardown: [() -> Void] = []

  init(base: OpaquePointer) { self.base = base }

  /// Ends the loop after the current callback; work queued after that is dropped.
  package func stop() { _ = cevent_base_loopbreak(base) }

  /// Runs on the loop thread after the loop ends and before the base is freed.
  package func onTeardown(_ body: @escaping () -> Void) { teardown.append(body) }

  fileprivate func runTeardown() {
    for body in teardown.reversed() { body() }
    teardown.removeAll()
  }
}

/// A libevent event whose callback is a Swift closure (loop thread only). The event is freed
/// with this object; keep it as long as it should fire.
package final class LoopEvent {
  private var event: OpaquePointer?
  private let action: () -> Void

  /// `fd` -1 makes a timer.
  package init?(handle: LoopHandle, fd: Int32 = -1, events: Int16 = 0, action: @escaping () -> Void) {
    self.action = action
    let fire: cevent_callback = { _, _, context in
      guard let context else { return }
      Unmanaged<LoopEvent>.fromOpaque(context).takeUnretainedValue().action()
    }
    // libevent keeps a plain pointer to this object, which frees the event before it goes.
    guard let event = cevent_new(handle.base, fd, events, fire, Unmanaged.passUnretained(self).toOpaque())
    else {
      return nil
    }
    self.event = event
  }

  deinit { if let event { cevent_free(event) } }

  /// Arms it: after `seconds` for a timer (repeating if made with CEVENT_EV_PERSIST), or until
  /// its fd is ready.
  @discardableResult
  package func arm(after seconds: Double? = nil) -> Bool {
    guard let event else { return false }
    guard let seconds else { return cevent_add(event, nil) == 0 }
    var interval = timeval(seconds: seconds)
    return cevent_add(event, &interval) == 0
  }

  package func disarm() { if let event { _ = cevent_del(event) } }

  /// Runs it in this loop iteration.
  package func fireSoon() { if let event { cevent_active(event, Int16(CEVENT_EV_TIMEOUT)) } }
}

extension HaulError {
  /// A failed system call, with its errno as the cause.
  static func system(_ message: String, call: String, errno code: Int32 = errno) -> HaulError {
    HaulError(
      .generic, "\(message): \(String(cString: strerror(code)))", underlying: SystemError(call, errno: code))
  }
}

extension timeval {
  init(seconds: Double) {
    let whole = seconds.rounded(.down)
    self.init(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
  }
}
