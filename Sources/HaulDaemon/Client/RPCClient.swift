import CEvent
import Haul
import HaulRPC

/// A JSON-RPC client for a running `haul daemon` (or aria2c): what `haul add`, `haul ls` and
/// the other manager commands use to work through the daemon that owns the catalog. HTTP from
/// libevent's evhttp client, on a loop thread of its own; one keep-alive connection.
///
///     let client = try await RPCClient.connect(port: 6800, secret: secret)
///     let gid = try await client.call("aria2.addUri", [["https://example.com/a.iso"]])
///     let status = try await client.call("aria2.tellStatus", [gid, ["status", "completedLength"]])
///     await client.close()
///
/// Threads: any.
package final class RPCClient: Sendable {
  package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing answered at the address (no daemon running), or the connection broke.
    case unreachable(String)
    /// The daemon answered with this JSON-RPC error (e.g. code 1 "Unauthorized").
    case rpc(RPCError)
    /// The answer was not JSON-RPC (HTTP status and the start of the body).
    case malformed(status: Int, body: String)

    package var description: String {
      switch self {
      case .unreachable(let address): "no haul daemon answers at \(address)"
      case .rpc(let error): error.message
      case .malformed(let status, let body): "not a JSON-RPC answer (HTTP \(status)): \(body)"
      }
    }
  }

  private let loop: EventLoop<ClientConnection>
  private let secret: String
  private let address: String
  private let counter = Locked(0)

  private init(loop: EventLoop<ClientConnection>, secret: String, address: String) {
    self.loop = loop
    self.secret = secret
    self.address = address
  }

  /// A client for the daemon at `host` (an IP literal) and `port`; nothing is sent yet.
  /// `timeout`: seconds a call may wait for its answer.
  package static func connect(host: String = "127.0.0.1", port: UInt16, secret: String, timeout: Int = 60)
    async throws(HaulError) -> RPCClient
  {
    let loop = try await EventLoop<ClientConnection>.start { handle, _ throws(HaulError) in
      try ClientConnection(handle: handle, host: host, port: port, timeout: timeout)
    }
    let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    return RPCClient(loop: loop, secret: secret, address: address)
  }

  /// Calls `method` with the token first and `params` after; returns its result.
  package func call(_ method: String, _ params: [JSONValue] = []) async throws(Failure) -> JSONValue {
    let id = counter.withLock { counter in
      counter += 1
      return counter
    }
    let body = JSONValue.object(
      [
        "jsonrpc": "2.0", "id": .integer(Int64(id)), "method": .string(method),
        "params": .array([.string("token:" + secret)] + params),
      ]
    ).serialized
    let answer: ClientConnection.Answer? = await withCheckedContinuation { continuation in
      let queued = loop.execute { connection in connection.post(body) { continuation.resume(returning: $0) } }
      if !queued { continuation.resume(returning: nil) }
    }
    guard let answer else { throw .unreachable(address) }
    guard let json = try? JSONValue.parse(answer.body), case .object(let reply) = json else {
      throw .malformed(status: answer.status, body: String(decoding: answer.body.prefix(200), as: UTF8.self))
    }
    if let error = reply["error"] {
      throw .rpc(RPCError(code: error["code"]?.integer ?? 0, message: error["message"]?.string ?? ""))
    }
    return reply["result"] ?? .null
  }

  /// Ends the connection and the loop thread.
  package func close() async {
    loop.execute { $0.handle.stop() }
    await loop.waitUntilStopped()
  }
}

/// The client's side of its loop thread: one evhttp connection and the requests in flight.
final class ClientConnection {
  struct Answer: Sendable {
    let status: Int
    let body: [UInt8]
  }

  /// What evhttp hands back to the request's callback (retained until then).
  private final class InFlight {
    unowned let connection: ClientConnection
    let id: Int
    init(connection: ClientConnection, id: Int) {
      self.connection = connection
      self.id = id
    }
  }

  let handle: LoopHandle
  private let connection: OpaquePointer
  /// The Host header: evhttp's client sends none of its own.
  private let host: String
  private var pending: [Int: (reply: (Answer?) -> Void, context: Unmanaged<InFlight>)] = [:]
  private var next = 0

  init(handle: LoopHandle, host: String, port: UInt16, timeout: Int) throws(HaulError) {
    self.handle = handle
    guard let connection = cevent_http_connection_new(handle.base, host, port) else {
      throw HaulError(.invalidInput, "cannot make a connection to \(host):\(port)")
    }
    cevent_connection_set_timeout(connection, Int32(timeout))
    self.connection = connection
    self.host = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    handle.onTeardown { [self] in
      // Requests still in flight go with the connection, without their callbacks: answer here.
      let waiting = pending
      pending.removeAll()
      for entry in waiting.values {
        entry.context.release()
        entry.reply(nil)
      }
      cevent_connection_free(connection)
    }
  }

  /// Sends a POST to /jsonrpc; `reply` gets status and body, or nil when the connection failed.
  func post(_ body: [UInt8], reply: @escaping (Answer?) -> Void) {
    let id = next
    next += 1
    let context = Unmanaged.passRetained(InFlight(connection: self, id: id))
    let done: cevent_request_callback = { request, raw in
      guard let raw else { return }
      let inFlight = Unmanaged<InFlight>.fromOpaque(raw).takeRetainedValue()
      inFlight.connection.answered(inFlight.id, request)
    }
    guard let request = cevent_request_new(done, context.toOpaque()) else {
      context.release()
      return reply(nil)
    }
    pending[id] = (reply, context)
    if let headers = cevent_request_output_headers(request) {
      _ = cevent_header_add(headers, "Host", host)
      _ = cevent_header_add(headers, "Content-Type", "application/json")
      _ = cevent_header_add(headers, "Content-Length", String(body.count))
    }
    if let output = cevent_request_output_body(request) {
      _ = body.withUnsafeBytes { cevent_buffer_add(output, $0.baseAddress, $0.count) }
    }
    if cevent_make_request(connection, request, UInt32(CEVENT_HTTP_POST), "/jsonrpc") != 0,
      let entry = pending.removeValue(forKey: id)
    {
      // evhttp freed the request without calling back.
      entry.context.release()
      entry.reply(nil)
    }
  }

  private func answered(_ id: Int, _ request: OpaquePointer?) {
    guard let entry = pending.removeValue(forKey: id) else { return }
    guard let request, cevent_request_response_code(request) > 0 else { return entry.reply(nil) }
    entry.reply(
      Answer(
        status: Int(cevent_request_response_code(request)),
        body: cevent_request_body(request).map(RPCHTTPServer.bytes) ?? []))
  }
}
