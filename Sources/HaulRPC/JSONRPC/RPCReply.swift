/// The answer to one call, serialized in aria2's member order: id, jsonrpc, result or error.
package struct RPCReply: Sendable, Equatable {
  package var id: JSONValue
  package var outcome: Result<JSONValue, RPCError>

  package init(id: JSONValue, outcome: Result<JSONValue, RPCError>) {
    self.id = id
    self.outcome = outcome
  }

  package init(id: JSONValue, result: JSONValue) { self.init(id: id, outcome: .success(result)) }
  package init(id: JSONValue, error: RPCError) { self.init(id: id, outcome: .failure(error)) }

  package var json: JSONValue {
    var object: JSONObject = ["id": id, "jsonrpc": "2.0"]
    switch outcome {
    case .success(let result): object["result"] = result
    case .failure(let error): object["error"] = error.json
    }
    return .object(object)
  }

  package var error: RPCError? {
    if case .failure(let error) = outcome { return error }
    return nil
  }
}

/// What goes back for a whole request body.
package enum RPCResponse: Sendable, Equatable {
  case single(RPCReply)
  case batch([RPCReply])
  /// Nothing to answer (HTTP sends 204). Never for a body `RPCEnvelope` read: aria2 answers
  /// every request, one without id with an Invalid Request error.
  case none

  package var json: JSONValue? {
    switch self {
    case .single(let reply): reply.json
    case .batch(let replies): .array(replies.map(\.json))
    case .none: nil
    }
  }

  /// True when any reply is aria2's "Unauthorized" (aria2 then waits a second before sending).
  package var isUnauthorized: Bool {
    switch self {
    case .single(let reply): reply.error == .unauthorized
    case .batch(let replies): replies.contains { $0.error == .unauthorized }
    case .none: false
    }
  }

  /// aria2's HTTP status for the reply: a single error is 400 (a method's failure, an invalid
  /// request), 404 (no such method) or 500 (the rest); a batch is always 200.
  package var httpStatus: Int {
    guard case .single(let reply) = self, let error = reply.error else { return self == .none ? 204 : 200 }
    switch error.code {
    case 1, -32600: return 400
    case -32601: return 404
    default: return 500
    }
  }

  /// The body: JSON, or `callback(JSON)` for aria2's JSONP form.
  package func body(jsonpCallback: String? = nil) -> [UInt8] {
    guard let json else { return [] }
    guard let jsonpCallback else { return json.serialized }
    return Array(jsonpCallback.utf8) + [UInt8(ascii: "(")] + json.serialized + [UInt8(ascii: ")")]
  }
}
