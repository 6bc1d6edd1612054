import Dispatch
import FoundationEssentials
import HaulDaemon
import HaulRPC
import HaulTestSupport

/// Runs blocking client I/O on a thread of its own, never on Swift concurrency's few threads
/// (the server's tasks need those to answer).
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    DispatchQueue(label: "haul.daemon.tests.client").async {
      continuation.resume(with: Result { try body() })
    }
  }
}

/// A JSON-RPC POST on its own connection. The read timeout only bounds a hang: under a sanitizer
/// on a loaded machine an answer was seen to take more than 10 s.
func post(
  port: UInt16, _ body: String, headers: [(String, String)] = [], path: String = "/jsonrpc",
  timeout: Double = 60
) async throws -> RawResponse {
  try await blocking {
    let connection = try RawHTTPConnection(port: Int(port), timeout: timeout)
    defer { connection.close() }
    try connection.send(
      method: "POST", path: path,
      headers: headers + [("Content-Type", "application/json"), ("Content-Length", "\(body.utf8.count)")])
    try connection.sendRaw(Array(body.utf8))
    return try connection.readResponse(method: "POST")
  }
}

/// A request without body on its own connection.
func request(
  _ method: String, port: UInt16, path: String, headers: [(String, String)] = [], timeout: Double = 60
) async throws -> RawResponse {
  try await blocking {
    try rawHTTPRequest(method: method, port: Int(port), path: path, headers: headers, timeout: timeout)
  }
}

extension RawResponse {
  var json: JSONValue? { try? JSONValue.parse(body) }
  var text: String { String(decoding: body, as: UTF8.self) }
}

/// A server on a free loopback port with the session methods and `extra` ones.
func startServer(
  secret: String = "s3cret", configure: (inout RPCServerConfiguration) -> Void = { _ in },
  methods: [RPCMethod] = [], unauthorizedDelay: Duration = .milliseconds(50)
) async throws -> RPCServer {
  var configuration = RPCServerConfiguration()
  configuration.port = 0
  configure(&configuration)
  let service = RPCService(
    secret: secret, methods: SessionMethods.methods(sessionID: "0123") + methods,
    unauthorizedDelay: unauthorizedDelay)
  return try await RPCServer.start(configuration, service: service)
}
