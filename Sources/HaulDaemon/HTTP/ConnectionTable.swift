import CEvent
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Every open connection, for the limits evhttp 2.1 lacks: how many connections at once, and how
/// long one may take to deliver a request (a client sending a byte every few seconds keeps
/// evhttp's own timeout from ever firing).
///
/// evhttp tells nothing of a connection before its first request, but it asks us for each new
/// connection's bufferevent. We make it, take a reference of our own (so the memory stays valid
/// after evhttp frees it), and look every second: a bufferevent whose status callback is gone
/// was freed by libevent (`bufferevent_free` clears the callbacks), so we drop our reference,
/// which closes its socket. Ending a connection is a `shutdown(2)` of its socket: evhttp then
/// reads EOF and cleans up after itself as for any client that left.
///
/// Threads: loop thread only.
final class ConnectionTable {
  final class Entry {
    let bufferevent: OpaquePointer
    let opened: ContinuousClock.Instant
    /// Accepted or last answered; a request must be complete within the timeout of this.
    var lastActivity: ContinuousClock.Instant
    /// A request on it is being answered: never ended for being idle.
    var busy = false
    var isWebSocket = false

    init(_ bufferevent: OpaquePointer, now: ContinuousClock.Instant) {
      self.bufferevent = bufferevent
      opened = now
      lastActivity = now
    }

    var fd: Int32 { cevent_bufferevent_fd(bufferevent) }
    private var noDelay = false

    /// Sets TCP_NODELAY once the socket is known: without it the last segment of an answer
    /// longer than one packet waits for the client's delayed ACK (40 ms per call).
    func sendPromptly() {
      guard !noDelay, fd >= 0 else { return }
      var one: Int32 = 1
      noDelay =
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0
    }
  }

  private var entries: [UInt: Entry] = [:]
  private let maximum: Int
  private let requestTimeout: Double
  private let readLimit: Int
  private var listeners: [OpaquePointer] = []
  private var sweep: LoopEvent?
  private var admission: LoopEvent?
  /// Connections the limit made us end (for the log and tests).
  private(set) var evicted = 0
  private var accepting = true

  /// accept() failures since the last sweep (EMFILE): libevent calls the listener's error
  /// callback with evhttp's argument, not ours, so it can only count here.
  private static let acceptFailures = Locked(0)

  init(handle: LoopHandle, maximum: Int, requestTimeout: Double, readLimit: Int) {
    self.maximum = maximum
    self.requestTimeout = requestTimeout
    self.readLimit = readLimit
    sweep = LoopEvent(handle: handle, events: Int16(CEVENT_EV_PERSIST)) { [unowned self] in self.sweepNow() }
    sweep?.arm(after: 1)
    admission = LoopEvent(handle: handle) { [unowned self] in self.admit() }
  }

  var count: Int { entries.count }

  /// Watches a listener evhttp accepts on: on an accept() failure it is paused until the next
  /// sweep, which first ends the oldest idle connection to free a descriptor.
  func watch(listener: OpaquePointer) {
    listeners.append(listener)
    cevent_listener_set_error_callback(listener) { listener, _ in
      ConnectionTable.acceptFailures.withLock { $0 += 1 }
      if let listener { _ = cevent_listener_disable(listener) }
    }
  }

  /// evhttp's factory for a new connection's bufferevent.
  func makeBufferevent(base: OpaquePointer) -> OpaquePointer? {
    guard let bufferevent = cevent_bufferevent_socket_new(base) else { return nil }
    cevent_bufferevent_incref(bufferevent)
    // Bounds what one connection can make us buffer.
    cevent_bufferevent_set_read_limit(bufferevent, readLimit)
    entries[key(bufferevent)] = Entry(bufferevent, now: .now)
    if entries.count > maximum { admission?.fireSoon() }
    return bufferevent
  }

  func entry(for bufferevent: OpaquePointer) -> Entry? { entries[key(bufferevent)] }

  /// The connection has left our hands (a WebSocket session freed it): drop our reference now.
  func release(_ bufferevent: OpaquePointer) {
    guard entries.removeValue(forKey: key(bufferevent)) != nil else { return }
    _ = cevent_bufferevent_decref(bufferevent)
  }

  /// Over the limit: end the oldest connections that are idle HTTP ones, so that a flood of
  /// idle connections never keeps a new client out; if every one is busy or a WebSocket, the
  /// newest connections are ended instead.
  private func admit() {
    var excess = entries.count - maximum
    guard excess > 0 else { return }
    let idle = entries.values.filter { !$0.busy && !$0.isWebSocket && $0.fd >= 0 }.sorted {
      $0.opened < $1.opened
    }
    for entry in idle.prefix(excess) {
      end(entry)
      excess -= 1
    }
    guard excess > 0 else { return }
    let newest = entries.values.filter { !$0.busy && $0.fd >= 0 }.sorted { $0.opened > $1.opened }
    for entry in newest.prefix(excess) { end(entry) }
  }

  private func end(_ entry: Entry) {
    evicted += 1
    _ = shutdown(entry.fd, Int32(SHUT_RDWR))
  }

  private func sweepNow() {
    let now = ContinuousClock.now
    for (key, entry) in entries {
      if cevent_bufferevent_status_callback(entry.bufferevent) == nil {
        // libevent freed it: our reference is the last one.
        _ = cevent_bufferevent_disable(entry.bufferevent, Int16(CEVENT_EV_READ | CEVENT_EV_WRITE))
        entries[key] = nil
        _ = cevent_bufferevent_decref(entry.bufferevent)
      } else if !entry.busy && !entry.isWebSocket && entry.fd >= 0
        && (now - entry.lastActivity) / .seconds(1) > requestTimeout
      {
        end(entry)
      }
    }
    let failures = Self.acceptFailures.withLock { failures in
      defer { failures = 0 }
      return failures
    }
    if failures > 0,
      let oldest = entries.values.filter({ !$0.busy && !$0.isWebSocket && $0.fd >= 0 }).min(by: {
        $0.opened < $1.opened
      })
    {
      end(oldest)
    }
    if accepting {
      for listener in listeners { _ = cevent_listener_enable(listener) }
    }
  }

  /// Shutting down: no new connections.
  func stopAccepting() {
    accepting = false
    for listener in listeners { _ = cevent_listener_disable(listener) }
  }

  /// At shutdown, after evhttp freed every connection.
  func releaseAll() {
    sweep = nil
    admission = nil
    for entry in entries.values { _ = cevent_bufferevent_decref(entry.bufferevent) }
    entries.removeAll()
  }

  private func key(_ bufferevent: OpaquePointer) -> UInt {
    UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(bufferevent)))
  }
}
