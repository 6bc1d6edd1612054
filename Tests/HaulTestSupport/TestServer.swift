import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An in-process HTTP/1.1 server on `127.0.0.1` (ephemeral port) serving `TestResource`s with
/// switchable faults. One thread per connection; persistent connections are supported.
///
/// ```swift
/// let server = try TestServer()
/// server.setResource("/f.bin", TestResource(body: TestResource.random(size: 1 << 20, seed: 1), etag: "\"v1\""))
/// server.enqueue("/f.bin", .status(503, headers: [("Retry-After", "1")]))
/// // ... point the client at server.url("/f.bin") ...
/// #expect(server.requests(for: "/f.bin").map(\.status) == [503, 200])
/// ```
///
/// Path lookups use the raw request target; when it has a query and nothing is registered for the whole
/// target, the part before `?` is tried.
public final class TestServer: Sendable {
  public let port: Int
  private let core: ServerCore

  /// Binds `127.0.0.1:0` and starts accepting connections.
  public init() throws {
    core = try ServerCore()
    port = core.port
    core.start()
  }

  deinit { core.stop() }

  /// `"http://127.0.0.1:<port><path>"`; `path` is used raw (it may contain %-escapes).
  public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

  /// Serves `resource` at `path` from now on (replacing any previous one and resetting its fault counters).
  public func setResource(_ path: String, _ resource: TestResource) {
    core.state.withLock {
      $0.resources[path] = resource
      $0.dropsDone[path] = nil
      $0.stallsDone[path] = nil
      $0.corruptionsDone[path] = nil
      $0.answered[path] = nil
    }
  }

  /// Stops serving `path` (it answers 404 again).
  public func removeResource(_ path: String) {
    core.state.withLock { _ = $0.resources.removeValue(forKey: path) }
  }

  /// The resource currently served at `path`.
  public func resource(_ path: String) -> TestResource? {
    core.state.withLock { $0.resources[path] }
  }

  /// Changes the faults of the resource at `path` in place (no-op if there is none), keeping counters.
  public func updateFaults(_ path: String, _ change: (inout TestFaults) -> Void) {
    core.state.withLock { state in
      guard var resource = state.resources[path] else { return }
      change(&resource.faults)
      state.resources[path] = resource
    }
  }

  /// Queues a one-shot reply; queued replies for a path are consumed in order by its next requests
  /// before normal behaviour (any method).
  public func enqueue(_ path: String, _ reply: ScriptedReply) {
    core.state.withLock { $0.scripted[path, default: []].append(reply) }
  }

  /// A permanent alias: every request to `from` gets `status` with `Location: location`.
  public func setRedirect(_ from: String, to location: String, status: Int = 302) {
    core.state.withLock { $0.redirects[from] = (location, status) }
  }

  /// Every request so far, in arrival order.
  public var requests: [RecordedRequest] { core.state.withLock { $0.requests } }

  /// The requests whose raw target equals `path`, or whose target without its query equals `path`.
  public func requests(for path: String) -> [RecordedRequest] {
    core.state.withLock { state in
      state.requests.filter { $0.path == path || ServerCore.withoutQuery($0.path) == path }
    }
  }

  /// Forgets the recorded requests.
  public func clearRequests() { core.state.withLock { $0.requests.removeAll() } }

  /// How many TCP connections have been accepted.
  public var connectionCount: Int { core.state.withLock { $0.connectionCount } }

  /// Response body bytes handed to the kernel so far, over all paths (chunk framing not counted).
  /// Bytes a killed client never read count too: they are what a download cost the server.
  public var bodyBytesSent: Int { core.state.withLock { $0.bodyBytesSent.values.reduce(0, +) } }

  /// Response body bytes sent for requests whose target (or target without its query) is `path`.
  public func bodyBytesSent(for path: String) -> Int {
    core.state.withLock { $0.bodyBytesSent[path, default: 0] }
  }

  /// Closes the listener and all connections (stalled and throttled ones included) and waits briefly for
  /// the server's threads to finish. Idempotent; also called on deinit.
  public func stop() { core.stop() }
}

// MARK: - Implementation

struct ServerState {
  var resources: [String: TestResource] = [:]
  var scripted: [String: [ScriptedReply]] = [:]
  var redirects: [String: (location: String, status: Int)] = [:]
  var dropsDone: [String: Int] = [:]
  var stallsDone: [String: Int] = [:]
  var corruptionsDone: [String: Int] = [:]
  /// Requests answered per path, for `alternateIgnoringRange`.
  var answered: [String: Int] = [:]
  var requests: [RecordedRequest] = []
  var connections: Set<Int32> = []
  var connectionCount = 0
  /// Body bytes sent, by resource key.
  var bodyBytesSent: [String: Int] = [:]
  var liveThreads = 0
  var listenerOpen = true
  var stopped = false
}

struct ParsedRequest {
  var method: String
  var target: String
  var version: String
  var headers: HeaderFields

  var wantsClose: Bool {
    let tokens = headers.values("Connection").flatMap { $0.split(separator: ",") }.map {
      $0.trimmingCharacters(in: .whitespaces).lowercased()
    }
    if tokens.contains("close") { return true }
    return version == "HTTP/1.0" && !tokens.contains("keep-alive")
  }
}

/// What to send for one request, decided under the lock.
enum Plan {
  case drop
  case simple(status: Int, headers: [(String, String)], body: [UInt8])
  case resource(ResourcePlan)
}

struct ResourcePlan {
  var status: Int
  var headers: [(String, String)]
  var body: ArraySlice<UInt8>
  var chunked: Bool
  /// Stop sending after this many body bytes...
  var cutAfter: Int?
  /// ...and then stall (true) or close (false).
  var stall: Bool
  var bytesPerSecond: Int?
  /// The resource key the body bytes are counted under.
  var key: String
}

final class ServerCore: Sendable {
  let state = TestLock(ServerState())
  let port: Int
  private let listener: Int32

  init() throws {
    let fd = try Sock.tcpSocket()
    Sock.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
    guard Sock.bindSocket(fd, Sock.loopbackAddress(port: 0)) == 0 else {
      let error = SocketError("bind")
      close(fd)
      throw error
    }
    guard listen(fd, 128) == 0 else {
      let error = SocketError("listen")
      close(fd)
      throw error
    }
    do {
      port = try Sock.localPort(fd)
    } catch {
      close(fd)
      throw error
    }
    listener = fd
  }

  func start() {
    state.withLock { $0.liveThreads += 1 }
    let thread = Thread { [self] in acceptLoop() }
    thread.name = "TestServer.accept"
    thread.start()
  }

  var isStopped: Bool { state.withLock { $0.stopped } }

  func stop() {
    state.withLock { state in
      guard !state.stopped else { return }
      state.stopped = true
      if state.listenerOpen { shutdown(listener, Int32(SHUT_RDWR)) }
      for fd in state.connections { shutdown(fd, Int32(SHUT_RDWR)) }
    }
    let deadline = ContinuousClock.now + .seconds(2)
    while state.withLock({ $0.liveThreads }) > 0 && ContinuousClock.now < deadline {
      usleep(1000)
    }
  }

  static func withoutQuery(_ target: String) -> String {
    guard let mark = target.firstIndex(of: "?") else { return target }
    return String(target[..<mark])
  }

  static func lookupKeys(_ target: String) -> [String] {
    let bare = withoutQuery(target)
    return bare == target ? [target] : [target, bare]
  }

  // MARK: Accepting

  private func acceptLoop() {
    defer {
      state.withLock { state in
        if state.listenerOpen {
          close(listener)
          state.listenerOpen = false
        }
        state.liveThreads -= 1
      }
    }
    while !isStopped {
      guard Sock.waitReadable(listener, milliseconds: 50) else { continue }
      let fd = accept(listener, nil, nil)
      if fd < 0 {
        if isStopped { return }
        usleep(1000)
        continue
      }
      let id: Int? = state.withLock { state in
        guard !state.stopped else { return nil }
        state.connections.insert(fd)
        state.connectionCount += 1
        state.liveThreads += 1
        return state.connectionCount
      }
      guard let id else {
        close(fd)
        return
      }
      Sock.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
      #if canImport(Darwin)
        Sock.setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
      #endif
      let thread = Thread { [self] in serveConnection(fd, id: id) }
      thread.name = "TestServer.connection.\(id)"
      thread.start()
    }
  }

  // MARK: Serving a connection

  private func serveConnection(_ fd: Int32, id: Int) {
    defer { finishConnection(fd) }
    var buffer: [UInt8] = []
    let headLimit = 64 * 1024
    while !isStopped {
      // Tolerate empty lines before a request line (RFC 9112 §2.2).
      while buffer.count >= 2 && buffer[0] == 13 && buffer[1] == 10 { buffer.removeFirst(2) }
      var headEnd = findHeaderEnd(buffer)
      while headEnd == nil {
        // A TLS handshake record (an https:// URL to this port) is no request: answered at
        // once, as HTTP servers do, so the client's handshake fails instead of waiting.
        if buffer.first == 0x16 {
          _ = sendSimple(
            fd, status: 400, headers: [], body: Array("bad request\n".utf8), head: false, close: true)
          return
        }
        if buffer.count > headLimit {
          _ = sendSimple(
            fd, status: 431, headers: [], body: Array("header block too large\n".utf8),
            head: false, close: true)
          return
        }
        let searchFrom = max(0, buffer.count - 3)
        guard Sock.receive(fd, into: &buffer) > 0 else { return }
        while buffer.count >= 2 && buffer[0] == 13 && buffer[1] == 10 { buffer.removeFirst(2) }
        headEnd = findHeaderEnd(buffer, from: min(searchFrom, max(0, buffer.count - 4)))
      }
      guard let end = headEnd else { return }
      if end > headLimit {
        _ = sendSimple(
          fd, status: 431, headers: [], body: Array("header block too large\n".utf8),
          head: false, close: true)
        return
      }
      let (requestLine, headers) = parseHeaderBlock(buffer[0..<end])
      buffer.removeFirst(end + 4)
      let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
      guard parts.count == 3, parts[2].hasPrefix("HTTP/") else {
        record(
          ParsedRequest(
            method: parts.first ?? "", target: parts.count > 1 ? parts[1] : "",
            version: "", headers: headers),
          connection: id, reply: .badRequest, status: 400)
        _ = sendSimple(
          fd, status: 400, headers: [], body: Array("bad request\n".utf8), head: false,
          close: true)
        return
      }
      let request = ParsedRequest(method: parts[0], target: parts[1], version: parts[2], headers: headers)
      // Discard a request body, if any.
      if let lengthText = headers["Content-Length"], let length = Int(lengthText), length > 0 {
        while buffer.count < length {
          guard Sock.receive(fd, into: &buffer) > 0 else { return }
        }
        buffer.removeFirst(length)
      }
      guard respond(to: request, fd: fd, connection: id) else { return }
    }
  }

  /// Half-closes, gives the peer a moment to read what was sent and close its side, then closes.
  /// (Closing with unread input would send a RST that can destroy data the peer has not read yet.)
  private func finishConnection(_ fd: Int32) {
    shutdown(fd, Int32(SHUT_WR))
    let deadline = ContinuousClock.now + .milliseconds(500)
    var scratch: [UInt8] = []
    while ContinuousClock.now < deadline && !isStopped {
      if Sock.waitReadable(fd, milliseconds: 20) {
        scratch.removeAll(keepingCapacity: true)
        if Sock.receive(fd, into: &scratch, capacity: 16384) <= 0 { break }
      }
    }
    state.withLock { state in
      state.connections.remove(fd)
      close(fd)
      state.liveThreads -= 1
    }
  }

  private func record(
    _ request: ParsedRequest, connection: Int, reply: ReplyKind, status: Int?, contentRange: String? = nil,
    faulted: Bool = false
  ) {
    state.withLock { state in
      Self.record(
        &state, request, connection: connection, reply: reply, status: status,
        contentRange: contentRange, faulted: faulted)
    }
  }

  static func record(
    _ state: inout ServerState, _ request: ParsedRequest, connection: Int, reply: ReplyKind, status: Int?,
    contentRange: String? = nil, faulted: Bool = false
  ) {
    state.requests.append(
      RecordedRequest(
        method: request.method, path: request.target, version: request.version, headers: request.headers,
        connectionID: connection, reply: reply, status: status, contentRange: contentRange, faulted: faulted))
  }

  /// Sends the reply; returns whether the connection stays open.
  private func respond(to request: ParsedRequest, fd: Int32, connection: Int) -> Bool {
    let plan = state.withLock { state in
      Self.plan(for: request, connection: connection, state: &state)
    }
    let isHead = request.method == "HEAD"
    var closeAfter = request.wantsClose
    switch plan {
    case .drop:
      return false
    case .simple(let status, let headers, let body):
      return sendSimple(fd, status: status, headers: headers, body: body, head: isHead, close: closeAfter)
    case .resource(let plan):
      if plan.cutAfter != nil { closeAfter = true }
      var head = "HTTP/1.1 \(plan.status) \(reasonPhrase(plan.status))\r\n"
      for (name, value) in plan.headers { head += "\(name): \(value)\r\n" }
      if request.wantsClose { head += "Connection: close\r\n" }
      head += "\r\n"
      guard Sock.sendAll(fd, head) else { return false }
      if isHead || plan.status == 416 { return !closeAfter }
      guard sendBody(fd, plan) else { return false }
      return !closeAfter
    }
  }

  private func sendSimple(
    _ fd: Int32, status: Int, headers: [(String, String)], body: [UInt8], head isHead: Bool, close: Bool
  ) -> Bool {
    var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    let lengthGiven = headers.contains {
      let name = $0.0.lowercased()
      return name == "content-length" || name == "transfer-encoding"
    }
    if !lengthGiven && status >= 200 && status != 204 && status != 304 {
      head += "Content-Length: \(body.count)\r\n"
    }
    if close { head += "Connection: close\r\n" }
    head += "\r\n"
    var bytes = Array(head.utf8)
    if !isHead { bytes += body }
    guard Sock.sendAll(fd, ArraySlice(bytes)) else { return false }
    return !close
  }

  /// Sends the body (chunked, throttled, cut short, stalled as the plan says); true if it was sent whole.
  private func sendBody(_ fd: Int32, _ plan: ResourcePlan) -> Bool {
    let body = plan.body
    // The pace restarts whenever the rate changes (`updateFaults` changes it for a response
    // in flight too: a test lifts a limit it no longer needs).
    var rate = plan.bytesPerSecond
    var start = ContinuousClock.now
    var paced = 0

    func sendCounted(_ part: ArraySlice<UInt8>) -> Bool {
      guard Sock.sendAll(fd, part) else { return false }
      state.withLock { $0.bodyBytesSent[plan.key, default: 0] += part.count }
      return true
    }

    func currentRate() -> Int? {
      // A removed resource keeps the rate its response had.
      let now =
        state.withLock { state -> Int?? in state.resources[plan.key].map(\.faults.bytesPerSecond) } ?? rate
      if now != rate {
        rate = now
        start = ContinuousClock.now
        paced = 0
      }
      return rate
    }

    func sendPaced(_ part: ArraySlice<UInt8>) -> Bool {
      var index = part.startIndex
      while index < part.endIndex {
        guard let rate = currentRate(), rate > 0 else { return sendCounted(part[index...]) }
        let slice = max(1, min(16384, rate / 20))
        let due = start + .nanoseconds(Int64(Double(paced) / Double(rate) * 1e9))
        while true {
          if isStopped { return false }
          let now = ContinuousClock.now
          if now >= due { break }
          let wait = min(due - now, .milliseconds(20))
          let micros = wait.components.attoseconds / 1_000_000_000_000 + wait.components.seconds * 1_000_000
          usleep(UInt32(max(1, micros)))
        }
        let end = min(index + slice, part.endIndex)
        guard sendCounted(part[index..<end]) else { return false }
        paced += end - index
        index = end
      }
      return true
    }

    let limit = min(body.count, plan.cutAfter ?? Int.max)
    let chunkSize = 4096
    var position = 0  // offset into body of the next byte to send
    while position < limit {
      let base = body.startIndex + position
      if plan.chunked {
        let chunkLength = min(chunkSize, body.count - position)
        guard Sock.sendAll(fd, String(chunkLength, radix: 16) + "\r\n") else { return false }
        let count = min(chunkLength, limit - position)
        guard sendPaced(body[base..<(base + count)]) else { return false }
        position += count
        if count < chunkLength { break }  // cut mid-chunk, without the chunk's CRLF
        guard Sock.sendAll(fd, "\r\n") else { return false }
      } else {
        let count = limit - position
        guard sendPaced(body[base..<(base + count)]) else { return false }
        position += count
      }
    }
    if position == body.count {
      if plan.chunked { return Sock.sendAll(fd, "0\r\n\r\n") }
      return true
    }
    if plan.stall {
      // Go silent until the client closes or the server stops.
      var scratch: [UInt8] = []
      while !isStopped {
        if Sock.waitReadable(fd, milliseconds: 50) {
          scratch.removeAll(keepingCapacity: true)
          if Sock.receive(fd, into: &scratch, capacity: 16384) <= 0 { break }
        }
      }
    }
    return false
  }
}
