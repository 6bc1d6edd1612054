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

private struct ServerState {
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

private struct ParsedRequest {
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
private enum Plan {
  case drop
  case simple(status: Int, headers: [(String, String)], body: [UInt8])
  case resource(ResourcePlan)
}

private struct ResourcePlan {
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

private enum RangeRequest {
  case ignore
  case unsatisfiable
  case satisfiable(Range<Int>)
}

final class ServerCore: Sendable {
  fileprivate let state = TestLock(ServerState())
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

  private static func lookupKeys(_ target: String) -> [String] {
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

  private static func record(
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
    let start = ContinuousClock.now
    var paced = 0

    func sendCounted(_ part: ArraySlice<UInt8>) -> Bool {
      guard Sock.sendAll(fd, part) else { return false }
      state.withLock { $0.bodyBytesSent[plan.key, default: 0] += part.count }
      return true
    }

    func sendPaced(_ part: ArraySlice<UInt8>) -> Bool {
      guard let rate = plan.bytesPerSecond, rate > 0 else { return sendCounted(part) }
      let slice = max(1, min(16384, rate / 20))
      var index = part.startIndex
      while index < part.endIndex {
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

  // MARK: Deciding the reply

  private static func plan(for request: ParsedRequest, connection: Int, state: inout ServerState) -> Plan {
    let keys = lookupKeys(request.target)

    for key in keys {
      guard var queue = state.scripted[key], !queue.isEmpty else { continue }
      let reply = queue.removeFirst()
      state.scripted[key] = queue
      switch reply {
      case .status(let status, let headers, let body):
        record(&state, request, connection: connection, reply: .scripted, status: status)
        return .simple(status: status, headers: headers, body: body)
      case .redirect(let status, let location):
        record(&state, request, connection: connection, reply: .scripted, status: status)
        return .simple(status: status, headers: [("Location", location)], body: [])
      case .dropConnection:
        record(&state, request, connection: connection, reply: .scripted, status: nil, faulted: true)
        return .drop
      }
    }

    for key in keys {
      guard let redirect = state.redirects[key] else { continue }
      record(&state, request, connection: connection, reply: .redirect, status: redirect.status)
      return .simple(status: redirect.status, headers: [("Location", redirect.location)], body: [])
    }

    for key in keys {
      guard let resource = state.resources[key] else { continue }
      return resourcePlan(request, resource, key: key, connection: connection, state: &state)
    }

    record(&state, request, connection: connection, reply: .notFound, status: 404)
    return .simple(status: 404, headers: [("Content-Type", "text/plain")], body: Array("not found\n".utf8))
  }

  private static func resourcePlan(
    _ request: ParsedRequest, _ resource: TestResource, key: String, connection: Int,
    state: inout ServerState
  ) -> Plan {
    let faults = resource.faults
    if let required = faults.requireAuthorization, request.headers["Authorization"] != required {
      record(&state, request, connection: connection, reply: .unauthorized, status: 401)
      return .simple(
        status: 401,
        headers: [("WWW-Authenticate", "Basic realm=\"HaulTest\""), ("Content-Type", "text/plain")],
        body: Array("unauthorized\n".utf8))
    }
    let isHead = request.method == "HEAD"
    if (isHead && faults.refuseHEAD) || (request.method != "GET" && !isHead) {
      record(&state, request, connection: connection, reply: .methodNotAllowed, status: 405)
      return .simple(
        status: 405, headers: [("Allow", faults.refuseHEAD ? "GET" : "GET, HEAD")],
        body: Array("method not allowed\n".utf8))
    }

    if let limit = faults.expireAfterResponses, state.answered[key, default: 0] >= limit {
      record(&state, request, connection: connection, reply: .resource, status: faults.expiredStatus)
      return .simple(
        status: faults.expiredStatus, headers: [("Content-Type", "text/plain")], body: Array("expired\n".utf8)
      )
    }
    let total = resource.body.count
    let reportedTotal = faults.wrongTotal ?? total
    var status = 200
    var slice = resource.body[...]
    var contentRange: String?
    state.answered[key, default: 0] += 1
    let ignoresRange =
      faults.ignoreRange || (faults.alternateIgnoringRange && state.answered[key, default: 0] % 2 == 0)
    // Range is only defined for GET (RFC 9110 §14.2).
    if !isHead, !ignoresRange, let rangeValue = request.headers["Range"] {
      var applies = true
      if let ifRange = request.headers["If-Range"], !faults.ignoreIfRange {
        applies = ifRangeMatches(ifRange, resource)
      }
      if applies {
        switch parseRange(rangeValue, total: total) {
        case .ignore:
          break
        case .unsatisfiable:
          status = 416
          slice = []
          contentRange = "bytes */\(reportedTotal)"
        case .satisfiable(let range):
          status = 206
          slice = resource.body[range]
          let shift = faults.contentRangeShift
          contentRange =
            "bytes \(range.lowerBound + shift)-\(range.upperBound - 1 + shift)/\(reportedTotal)"
        }
      }
    }

    var headers: [(String, String)] = []
    if let contentType = resource.contentType { headers.append(("Content-Type", contentType)) }
    headers.append(contentsOf: resource.extraHeaders)
    if let contentDigest = resource.contentDigest, status != 416 {
      headers.append(("Content-Digest", contentDigest(slice)))
    }
    if !isHead, status == 206, let index = faults.corruptByte, slice.indices.contains(index),
      state.corruptionsDone[key, default: 0] < faults.corruptTimes
    {
      state.corruptionsDone[key, default: 0] += 1
      var corrupted = Array(slice)
      corrupted[index - slice.startIndex] ^= 0x01
      slice = corrupted[...]
    }
    if faults.chunked && status != 416 {
      headers.append(("Transfer-Encoding", "chunked"))
    } else if let claimed = faults.claimedLength, status == 200 {
      headers.append(("Content-Length", String(claimed)))
    } else {
      headers.append(("Content-Length", String(slice.count)))
    }
    if let contentRange { headers.append(("Content-Range", contentRange)) }
    if !faults.ignoreRange { headers.append(("Accept-Ranges", "bytes")) }
    if let etag = resource.etag { headers.append(("ETag", etag)) }
    if let lastModified = resource.lastModified { headers.append(("Last-Modified", lastModified)) }
    if let disposition = resource.contentDisposition { headers.append(("Content-Disposition", disposition)) }

    var cutAfter: Int?
    var stall = false
    if !isHead && status != 416 {
      if let count = faults.dropAfterBytes, count < slice.count,
        state.dropsDone[key, default: 0] < faults.dropTimes
      {
        state.dropsDone[key, default: 0] += 1
        cutAfter = max(0, count)
      } else if let count = faults.stallAfterBytes, count < slice.count,
        state.stallsDone[key, default: 0] < faults.stallTimes
      {
        state.stallsDone[key, default: 0] += 1
        cutAfter = max(0, count)
        stall = true
      }
    }
    // A claimed length is never met: the whole body, then the connection closes.
    if faults.claimedLength != nil, status == 200, cutAfter == nil { cutAfter = slice.count }
    record(
      &state, request, connection: connection, reply: .resource, status: status,
      contentRange: contentRange, faulted: cutAfter != nil)
    return .resource(
      ResourcePlan(
        status: status, headers: headers, body: slice, chunked: faults.chunked, cutAfter: cutAfter,
        stall: stall, bytesPerSecond: faults.bytesPerSecond, key: key))
  }

  /// RFC 9110 §13.1.5: an entity tag matches only by strong comparison; a date only if it is exactly
  /// the Last-Modified value.
  private static func ifRangeMatches(_ value: String, _ resource: TestResource) -> Bool {
    let value = value.trimmingCharacters(in: .whitespaces)
    if value.hasPrefix("\"") || value.hasPrefix("W/") {
      guard let etag = resource.etag, !etag.hasPrefix("W/"), !value.hasPrefix("W/") else { return false }
      return value == etag
    }
    guard let lastModified = resource.lastModified else { return false }
    return value == lastModified
  }

  /// A single `bytes=` range; anything else (other units, several ranges, bad syntax) is ignored.
  private static func parseRange(_ value: String, total: Int) -> RangeRequest {
    let value = value.trimmingCharacters(in: .whitespaces)
    guard value.lowercased().hasPrefix("bytes=") else { return .ignore }
    let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
    guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignore }
    let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
    let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
    func number(_ text: String) -> Int? {
      guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
      return Int(text)
    }
    if first.isEmpty {
      guard let suffix = number(last) else { return .ignore }
      if suffix == 0 || total == 0 { return .unsatisfiable }
      return .satisfiable(max(0, total - suffix)..<total)
    }
    guard let start = number(first) else { return .ignore }
    var end = total - 1
    if !last.isEmpty {
      guard let given = number(last), given >= start else { return .ignore }
      end = min(given, total - 1)
    }
    if start >= total { return .unsatisfiable }
    return .satisfiable(start..<(end + 1))
  }
}

func reasonPhrase(_ status: Int) -> String {
  switch status {
  case 200: "OK"
  case 201: "Created"
  case 204: "No Content"
  case 206: "Partial Content"
  case 301: "Moved Permanently"
  case 302: "Found"
  case 303: "See Other"
  case 304: "Not Modified"
  case 307: "Temporary Redirect"
  case 308: "Permanent Redirect"
  case 400: "Bad Request"
  case 401: "Unauthorized"
  case 403: "Forbidden"
  case 404: "Not Found"
  case 405: "Method Not Allowed"
  case 407: "Proxy Authentication Required"
  case 408: "Request Timeout"
  case 410: "Gone"
  case 412: "Precondition Failed"
  case 416: "Range Not Satisfiable"
  case 429: "Too Many Requests"
  case 431: "Request Header Fields Too Large"
  case 500: "Internal Server Error"
  case 502: "Bad Gateway"
  case 503: "Service Unavailable"
  case 504: "Gateway Timeout"
  default: "Status \(status)"
  }
}
