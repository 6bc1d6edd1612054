import Dispatch
import FoundationEssentials
import Haul
import HaulDaemon
import HaulRPC

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Serves control requests on the catalog's socket while this process owns the catalog
/// (`haul run`, `haul ui`): JSON-RPC 2.0, one request (a call or a batch) per line and its answer
/// on one line, answered by an `RPCService` with aria2's methods (those the daemon serves over
/// HTTP) and the subcommands' own (`ControlMethods`).
///
/// Whoever can connect is the catalog's own user (the socket is 0600 and the peer's user is
/// checked), so calls on the socket need no token: the server adds the service's secret.
///
/// Threads: one accepts; each connection has a thread of its own that reads a line, waits for
/// the service's answer and writes it back (a few clients: the subcommands, short-lived, and
/// `haul ui` attached to the owner, for as long as it runs).
final class ControlServer: Sendable {
  static let maximumLine = 64 << 20
  static let maximumConnections = 32

  private let listener: ControlSocket.Listener
  private let service: RPCService
  private let secret: String
  private let state = Locked(State())

  /// The connections, each by its descriptor (open while it is in `open`): whether it is
  /// answering a request (read and not yet answered: `drain` waits for them).
  private struct State {
    var stopped = false
    var open: [Int32: Bool] = [:]
    var answering: Int { open.values.count { $0 } }
  }

  private init(listener: ControlSocket.Listener, service: RPCService, secret: String) {
    self.listener = listener
    self.service = service
    self.secret = secret
  }

  /// Listens on `location`'s control socket and answers with `service`, whose secret is `secret`.
  /// - Throws: `.fileSystem` when the socket cannot be made (something else is at its name).
  static func start(_ location: CatalogLocation, service: RPCService, secret: String) throws(HaulError)
    -> ControlServer
  {
    let server = ControlServer(
      listener: try ControlSocket.bindListener(at: location.controlSocket), service: service, secret: secret)
    Detached.thread { server.acceptLoop() }
    return server
  }

  /// The control socket of the catalog `manager` has open: the subcommands' methods
  /// (`ControlMethods`) and aria2's (`Aria2Methods`, as `haul daemon` serves them over HTTP), so
  /// an aria2 client on the socket sees the same downloads. `directory`: where aria2.addUri puts
  /// files without a `dir`; `shutdown`: what `aria2.shutdown` and `forceShutdown` do.
  /// Call it once the manager holds the catalog's lock: a socket already at the name is then a
  /// stale one (its maker no longer owns the catalog) and is replaced.
  static func start(
    _ location: CatalogLocation, manager: DownloadManager, directory: String,
    shutdown: @escaping @Sendable (_ force: Bool) -> Void
  ) throws(HaulError) -> ControlServer {
    let aria2 = Aria2Methods(manager: manager, directory: directory, shutdown: shutdown)
    return try start(location, manager: manager, more: aria2.methods)
  }

  /// The control socket of the catalog `manager` has open, with the subcommands' methods and
  /// `more` (the caller's `Aria2Methods`: `haul daemon` gives its own, whose shutdown stops it).
  static func start(_ location: CatalogLocation, manager: DownloadManager, more: [RPCMethod])
    throws(HaulError) -> ControlServer
  {
    let secret = RandomToken.hex(bytes: 32)
    let methods = ControlMethods.methods(manager) + more
    return try start(location, service: RPCService(secret: secret, methods: methods), secret: secret)
  }

  /// Stops accepting and removes the socket. Connections being answered get their answer and
  /// then end; the others end at once, so that a client that stays connected (`haul ui`) learns
  /// that the owner is going.
  func stop() {
    let first = state.withLock { state in
      defer { state.stopped = true }
      guard !state.stopped else { return false }
      // Their threads wake from recv(2) and close them (each leaves `open` before it closes).
      for (descriptor, answering) in state.open where !answering { shutdown(descriptor, Int32(SHUT_RDWR)) }
      return true
    }
    guard first else { return }
    ControlSocket.remove(listener)
    // Wakes the thread blocked in accept(2); it closes the descriptor.
    shutdown(listener.descriptor, Int32(SHUT_RDWR))
  }

  /// After `stop()`: waits until every request being carried out is answered (the reply to
  /// `aria2.shutdown`, whose method is what stopped the owner), at most `seconds`.
  func drain(seconds: Double = 5) async {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while state.withLock({ $0.answering > 0 }), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
  }

  private func acceptLoop() {
    while true {
      let connection = accept(listener.descriptor, nil, nil)
      if connection < 0 {
        let code = errno
        if state.withLock({ $0.stopped }) { break }
        // Out of descriptors: wait for some to close rather than spin.
        if code == EMFILE || code == ENFILE { usleep(100_000) }
        if [EINTR, ECONNABORTED, EMFILE, ENFILE].contains(code) { continue }
        break
      }
      _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
      let admitted = state.withLock { state in
        guard !state.stopped, state.open.count < Self.maximumConnections else { return false }
        state.open[connection] = false
        return true
      }
      guard admitted, ControlSocket.peerUser(connection) == geteuid() else {
        if admitted { state.withLock { $0.open[connection] = nil } }
        close(connection)
        continue
      }
      Detached.thread { [self] in
        serve(connection)
        state.withLock { $0.open[connection] = nil }
        close(connection)
      }
    }
    close(listener.descriptor)
  }

  private func serve(_ descriptor: Int32) {
    var reader = LineReader(descriptor: descriptor, limit: Self.maximumLine)
    while true {
      let line: [UInt8]
      switch reader.next() {
      case .line(let bytes): line = bytes
      case .tooLong:
        let reply = RPCResponse.single(
          RPCReply(id: .null, error: RPCError(code: -32600, message: "Request too large.")))
        _ = Self.write(reply.body() + [0x0A], to: descriptor)
        return
      case .end: return
      }
      // A blank line (or one of spaces, or a lone `\r` from `nc -C`) is no request: skipped
      // unanswered, as a line protocol does, rather than answered with a parse error.
      if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
      let envelope = Self.authorized(RPCEnvelope.parse(line), secret: secret)
      // A request read after `stop()` is not carried out: the connection ends unanswered.
      let taken = state.withLock { state in
        guard !state.stopped else { return false }
        state.open[descriptor] = true
        return true
      }
      guard taken else { return }
      let response = Detached.wait { [service] in await service.respond(to: envelope) }
      let written = response.json.map { Self.write($0.serialized + [0x0A], to: descriptor) } ?? true
      let serving = state.withLock { state in
        state.open[descriptor] = false
        return !state.stopped
      }
      if !written || !serving { return }
    }
  }

  /// The envelope with the service's token as each call's first parameter (the methods that
  /// take none are left as they are; `system.multicall`'s calls get it each).
  static func authorized(_ envelope: RPCEnvelope, secret: String) -> RPCEnvelope {
    let token = JSONValue.string("token:" + secret)
    func add(_ item: RPCItem) -> RPCItem {
      guard case .call(var call) = item else { return item }
      switch call.method {
      case "system.listMethods", "system.listNotifications": break
      case "system.multicall":
        guard case .array(let calls)? = call.params.first else { break }
        call.params[0] = .array(
          calls.map { spec in
            guard case .object(var object) = spec else { return spec }
            object["params"] = .array([token] + (object["params"]?.array ?? []))
            return .object(object)
          })
      default:
        call.params.insert(token, at: 0)
      }
      return .call(call)
    }
    switch envelope {
    case .single(let item): return .single(add(item))
    case .batch(let items): return .batch(items.map(add))
    }
  }

  /// Writes all of `bytes`; false when the client is gone.
  static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { buffer in
        SystemCall.retryingEINTR {
          send(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset, Int32(MSG_NOSIGNAL))
        }
      }
      guard written > 0 else { return false }
      offset += written
    }
    return true
  }
}

/// Lines of a stream socket, each without its `\n`.
struct LineReader {
  enum Next {
    case line([UInt8])
    /// A line longer than the limit (the rest of the stream is not read).
    case tooLong
    case end
  }

  let descriptor: Int32
  let limit: Int
  private var buffer: [UInt8] = []
  private var scanned = 0

  init(descriptor: Int32, limit: Int) {
    self.descriptor = descriptor
    self.limit = limit
  }

  mutating func next() -> Next {
    while true {
      if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
        let line = Array(buffer[..<newline])
        buffer.removeSubrange(...newline)
        scanned = 0
        return .line(line)
      }
      scanned = buffer.count
      guard buffer.count <= limit else { return .tooLong }
      var chunk = [UInt8](repeating: 0, count: 64 << 10)
      let count = chunk.withUnsafeMutableBytes { raw in
        SystemCall.retryingEINTR { recv(descriptor, raw.baseAddress, raw.count, 0) }
      }
      guard count > 0 else { return .end }
      buffer += chunk[..<count]
    }
  }
}

/// Threads of their own for blocking work (sockets), so that none of Swift's shared threads
/// waits on a peer.
enum Detached {
  /// Runs `body` on a new detached thread.
  static func thread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
      let body: @Sendable () -> Void
      init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { raw in
        guard let raw else { return nil }
        let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
        box.body()
        return nil
      }, box)
    if created == 0 {
      pthread_detach(thread)
    } else {
      // No thread: run it here rather than lose it.
      Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
    }
  }

  /// Blocks this (non-pool) thread until `body` ends on a task.
  static func wait<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) -> Value {
    let result = Locked<Value?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
      let value = await body()
      result.withLock { $0 = value }
      done.signal()
    }
    while true {
      done.wait()
      // Set before the signal.
      if let value = result.withLock({ $0 }) { return value }
    }
  }

  /// Runs blocking `body` on a thread of its own and returns its result to the caller's task.
  static func run<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
      thread { continuation.resume(returning: body()) }
    }
  }

}
