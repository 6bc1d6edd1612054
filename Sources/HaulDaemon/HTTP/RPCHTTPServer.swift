import CEvent
import Haul
import HaulRPC

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The daemon's side of the loop thread: evhttp serving `/jsonrpc` (POST, aria2's GET form,
/// OPTIONS preflights, WebSocket upgrades), the connections, the WebSocket sessions, and the
/// requests waiting for their answer.
///
/// A request is checked here (Host, path, method, CORS) and answered at once if it is refused;
/// otherwise its body goes to a task that decodes and runs it with the `RPCService`, off this
/// thread, and the answer comes back through the loop's `execute`. evhttp keeps such a request
/// valid until it is answered, even if its client leaves (it then frees it on our reply).
///
/// Threads: loop thread only (it is the loop's context).
final class RPCHTTPServer {
  let handle: LoopHandle
  let loop: EventLoop<RPCHTTPServer>
  let service: RPCService
  let configuration: RPCServerConfiguration
  let sockets: ListeningSockets
  let table: ConnectionTable
  private let hostPolicy: HostPolicy
  private let cors: CORSPolicy
  private var http: OpaquePointer?
  private var pending:
    [Int: (request: OpaquePointer, connection: ConnectionTable.Entry?, callback: String?)] = [:]
  var sessions: [Int: WebSocketSession] = [:]
  private var nextID = 0
  private var pinger: LoopEvent?
  private var shutdownPoll: LoopEvent?
  private(set) var stopping = false

  init(
    handle: LoopHandle, loop: EventLoop<RPCHTTPServer>, service: RPCService,
    configuration: RPCServerConfiguration
  ) throws(HaulError) {
    self.handle = handle
    self.loop = loop
    self.service = service
    self.configuration = configuration
    hostPolicy = configuration.hostPolicy
    cors = configuration.corsPolicy
    sockets = try ListeningSockets.make(port: configuration.port, all: configuration.listenOnAllAddresses)
    table = ConnectionTable(
      handle: handle, maximum: configuration.maximumConnections, requestTimeout: configuration.requestTimeout,
      // evhttp keeps a body with a Content-Length in the connection's buffer until all of it is
      // there, so the buffer must hold the largest request.
      readLimit: configuration.maximumRequestSize + configuration.maximumHeaderSize + (64 << 10))
    guard let http = cevent_http_new(handle.base) else {
      for socket in sockets.sockets { close(socket.fd) }
      throw HaulError(.generic, "libevent could not create an HTTP server")
    }
    self.http = http
    let context = Unmanaged.passUnretained(self).toOpaque()
    cevent_http_set_handler(
      http,
      { request, context in
        guard let request, let context else { return }
        Unmanaged<RPCHTTPServer>.fromOpaque(context).takeUnretainedValue().handle(request)
      }, context)
    cevent_http_set_bufferevent_factory(
      http,
      { base, context in
        guard let base, let context else { return nil }
        return Unmanaged<RPCHTTPServer>.fromOpaque(context).takeUnretainedValue().table.makeBufferevent(
          base: base)
      }, context)
    var timeout = timeval(seconds: configuration.requestTimeout)
    cevent_http_set_timeout(http, &timeout)
    cevent_http_set_max_headers_size(http, configuration.maximumHeaderSize)
    cevent_http_set_max_body_size(http, configuration.maximumRequestSize)
    cevent_http_set_allowed_methods(http, UInt16(CEVENT_HTTP_GET | CEVENT_HTTP_POST | CEVENT_HTTP_OPTIONS))
    for (index, socket) in sockets.sockets.enumerated() {
      guard let bound = cevent_http_accept_socket(http, socket.fd) else {
        // evhttp closes the sockets it took as it is freed, and may have closed this one; only
        // the later ones are surely ours (a leak on this path beats closing a reused number).
        cevent_http_free(http)
        for socket in sockets.sockets[(index + 1)...] { close(socket.fd) }
        throw HaulError(.generic, "libevent could not serve on \(socket.address)")
      }
      if let listener = cevent_http_bound_listener(bound) { table.watch(listener: listener) }
    }
    pinger = LoopEvent(handle: handle, events: Int16(CEVENT_EV_PERSIST)) { [unowned self] in
      for session in sessions.values { session.keepAlive() }
    }
    pinger?.arm(after: configuration.webSocketPingInterval)
    handle.onTeardown { [self] in freeEverything() }
  }

  // MARK: - Requests

  private func handle(_ request: OpaquePointer) {
    let connection = entry(of: request)
    connection?.lastActivity = .now
    guard !stopping else { return reply(request, status: 503, text: "haul daemon is shutting down") }
    let headers = cevent_request_input_headers(request)
    let header: (String) -> String? = { name in
      guard let headers, let value = cevent_header_find(headers, name) else { return nil }
      return String(cString: value)
    }
    switch hostPolicy.verdict(forHostHeader: header("Host")) {
    case .allowed: break
    case .missing: return reply(request, status: 400, text: "a Host header is required")
    case .refused(let host):
      return reply(
        request, status: 421,
        text:
          "Host '\(host)' is not allowed: use localhost or an IP address (protection against DNS rebinding)")
    }
    guard let path = cevent_request_path(request).map({ String(cString: $0) }), path == "/jsonrpc" else {
      return reply(request, status: 404, text: "not found: the JSON-RPC endpoint is /jsonrpc")
    }
    let method = cevent_request_method(request)
    switch WebSocketHandshake.verdict(isGet: method == CEVENT_HTTP_GET, header: header) {
    case .notUpgrade: break
    case .accept(let key): return upgrade(request, key: key, connection: connection)
    case .refuse(let status, let reason):
      return reply(
        request, status: status, text: reason, extra: status == 426 ? [("Sec-WebSocket-Version", "13")] : [])
    }
    switch method {
    case UInt32(CEVENT_HTTP_OPTIONS):
      let granted = cors.preflightHeaders(
        origin: header("Origin"), requestMethod: header("Access-Control-Request-Method"),
        requestHeaders: header("Access-Control-Request-Headers"))
      reply(request, status: 200, body: [], contentType: nil, extra: granted)
    case UInt32(CEVENT_HTTP_GET):
      do throws(GetRequest.Failure) {
        let get = try GetRequest.parse(query: cevent_request_query(request).map { String(cString: $0) })
        dispatch(request, connection: connection, callback: get.callback) { service in
          await service.respond(to: get.envelope)
        }
      } catch {
        reply(request, status: 400, text: "jsoncallback must be a plain JavaScript function name")
      }
    default:
      let body = cevent_request_body(request).map(Self.bytes) ?? []
      dispatch(request, connection: connection, callback: nil) { service in await service.respond(to: body) }
    }
  }

  /// Answers in a task, off the loop thread; the reply comes back through the loop.
  private func dispatch(
    _ request: OpaquePointer, connection: ConnectionTable.Entry?, callback: String?,
    _ work: @escaping @Sendable (RPCService) async -> RPCResponse
  ) {
    let id = nextID
    nextID += 1
    pending[id] = (request, connection, callback)
    connection?.busy = true
    connection?.sendPromptly()
    Task(executorPreference: WorkerExecutor.shared) { [loop, service] in
      let response = await work(service)
      loop.execute { server in server.complete(id, response) }
    }
  }

  private func complete(_ id: Int, _ response: RPCResponse) {
    guard let (request, connection, callback) = pending.removeValue(forKey: id) else { return }
    connection?.busy = false
    connection?.lastActivity = .now
    let status = response.httpStatus
    reply(
      request, status: status, body: response.body(jsonpCallback: callback),
      contentType: status == 204 ? nil : callback == nil ? "application/json-rpc" : "text/javascript",
      // aria2 closes the connection after an error.
      extra: status >= 400 ? [("Connection", "close")] : [])
  }

  private func reply(_ request: OpaquePointer, status: Int, text: String, extra: [(String, String)] = []) {
    reply(
      request, status: status, body: Array((text + "\n").utf8), contentType: "text/plain; charset=utf-8",
      extra: extra)
  }

  private func reply(
    _ request: OpaquePointer, status: Int, body: [UInt8], contentType: String?, extra: [(String, String)] = []
  ) {
    if let headers = cevent_request_output_headers(request) {
      var all = cors.replyHeaders.map { ($0.name, $0.value) } + extra
      if let contentType { all.append(("Content-Type", contentType)) }
      all.append(("Cache-Control", "no-cache"))
      for (name, value) in all { _ = cevent_header_add(headers, name, value) }
    }
    let buffer = cevent_buffer_new()
    if let buffer, !body.isEmpty {
      _ = body.withUnsafeBytes { cevent_buffer_add(buffer, $0.baseAddress, $0.count) }
    }
    cevent_send_reply(request, Int32(status), Self.reason(status), buffer)
    if let buffer { cevent_buffer_free(buffer) }
  }

  private func entry(of request: OpaquePointer) -> ConnectionTable.Entry? {
    guard let connection = cevent_request_connection(request),
      let bufferevent = cevent_connection_bufferevent(connection)
    else { return nil }
    return table.entry(for: bufferevent)
  }

  // MARK: - WebSocket

  private func upgrade(_ request: OpaquePointer, key: String, connection entry: ConnectionTable.Entry?) {
    guard let connection = cevent_request_connection(request),
      let bufferevent = cevent_connection_bufferevent(connection), let entry
    else { return reply(request, status: 500, text: "the connection is gone") }
    if let headers = cevent_request_output_headers(request) {
      _ = cevent_header_add(headers, "Upgrade", "websocket")
      _ = cevent_header_add(headers, "Connection", "Upgrade")
      _ = cevent_header_add(
        headers, "Sec-WebSocket-Accept", WebSocketHandshake.acceptValue(key: key, sha1: SHA1.digest))
    }
    // The 101 goes out as headers only; from here the bufferevent is ours to drive.
    cevent_send_reply_start(request, 101, "Switching Protocols")
    entry.isWebSocket = true
    entry.sendPromptly()
    let id = nextID
    nextID += 1
    let session = WebSocketSession(id: id, connection: connection, bufferevent: bufferevent, server: self)
    sessions[id] = session
    session.start()
  }

  /// Called by a session once its connection is freed.
  func sessionEnded(_ session: WebSocketSession) {
    sessions[session.id] = nil
    table.release(session.bufferevent)
  }

  /// Sends a notification (a JSON-RPC request without id) to every WebSocket client.
  func broadcast(_ text: [UInt8]) {
    for session in sessions.values { session.notify(text) }
  }

  // MARK: - Stopping

  /// Stops accepting, says goodbye to WebSocket clients, answers what is being answered (for up
  /// to `grace` seconds), then ends the loop.
  func shutdown(grace: Double) {
    guard !stopping else { return }
    stopping = true
    table.stopAccepting()
    for session in sessions.values {
      session.close(code: WebSocketCloseCode.goingAway, reason: "haul daemon is stopping")
    }
    let deadline = ContinuousClock.now + .milliseconds(Int(grace * 1000))
    shutdownPoll = LoopEvent(handle: handle, events: Int16(CEVENT_EV_PERSIST)) { [unowned self] in
      if (pending.isEmpty && sessions.isEmpty) || ContinuousClock.now >= deadline { handle.stop() }
    }
    shutdownPoll?.arm(after: 0.02)
  }

  private func freeEverything() {
    pinger = nil
    shutdownPoll = nil
    // evhttp frees every connection and every request still waiting: forget them first.
    pending.removeAll()
    for session in sessions.values { session.abandon() }
    sessions.removeAll()
    if let http { cevent_http_free(http) }
    http = nil
    table.releaseAll()
  }

  // MARK: - Helpers

  static func bytes(of buffer: OpaquePointer) -> [UInt8] {
    let count = cevent_buffer_length(buffer)
    guard count > 0 else { return [] }
    return [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
      initialized = max(0, cevent_buffer_copyout(buffer, storage.baseAddress, count))
    }
  }

  static func reason(_ status: Int) -> String {
    switch status {
    case 101: "Switching Protocols"
    case 200: "OK"
    case 204: "No Content"
    case 400: "Bad Request"
    case 404: "Not Found"
    case 421: "Misdirected Request"
    case 426: "Upgrade Required"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "Status"
    }
  }
}
