/// One method call read from a request: `{"jsonrpc":"2.0","id":…,"method":"…","params":[…]}`.
package struct RPCCall: Sendable, Equatable {
  package var method: String
  package var params: [JSONValue]
  /// Nil for a notification (no `id` member): it runs, and nothing is sent back.
  package var id: JSONValue?

  package init(method: String, params: [JSONValue] = [], id: JSONValue?) {
    self.method = method
    self.params = params
    self.id = id
  }
}

/// One element of a request: a call to run, or the error that replaces it.
package enum RPCItem: Sendable, Equatable {
  case call(RPCCall)
  case invalid(RPCError, id: JSONValue)
}

/// What a request body holds: one item, or a batch (a JSON array) of them.
package enum RPCEnvelope: Sendable, Equatable {
  case single(RPCItem)
  case batch([RPCItem])

  /// Batches larger than this are refused whole (one Invalid Request error): each call costs
  /// a reply, and the body limit alone would allow a hundred thousand.
  package static let maximumBatch = 1000

  /// Reads a body; never fails: malformed JSON becomes a Parse error item, a wrong shape an
  /// Invalid Request one, as JSON-RPC 2.0 says.
  package static func parse(_ body: some Collection<UInt8>) -> RPCEnvelope {
    do throws(JSONParseError) {
      return RPCEnvelope(json: try JSONValue.parse(body))
    } catch {
      return .single(.invalid(.parseError, id: .null))
    }
  }

  package init(json: JSONValue) {
    switch json {
    case .array(let elements) where elements.isEmpty || elements.count > Self.maximumBatch:
      self = .single(.invalid(.invalidRequest, id: .null))
    case .array(let elements):
      self = .batch(elements.map(Self.item))
    default:
      self = .single(Self.item(json))
    }
  }

  /// Validates one request object. Lenient where aria2 is (a missing `jsonrpc` member is
  /// accepted), strict where JSON-RPC 2.0 is (an id must be a string, a number or null).
  static func item(_ json: JSONValue) -> RPCItem {
    guard case .object(let object) = json else { return .invalid(.invalidRequest, id: .null) }
    var id: JSONValue?
    switch object["id"] {
    case nil: id = nil
    case .some(let value):
      switch value {
      case .string, .integer, .double, .number, .null: id = value
      default: return .invalid(.invalidRequest, id: .null)
      }
    }
    if let version = object["jsonrpc"], version != .string("2.0") {
      return .invalid(.invalidRequest, id: id ?? .null)
    }
    guard case .string(let method) = object["method"] else {
      return .invalid(.invalidRequest, id: id ?? .null)
    }
    switch object["params"] {
    case nil: return .call(RPCCall(method: method, params: [], id: id))
    case .array(let params): return .call(RPCCall(method: method, params: params, id: id))
    default: return .invalid(.invalidParams, id: id ?? .null)  // Named parameters: aria2 has none.
    }
  }
}
