/// One method call read from a request: `{"jsonrpc":"2.0","id":…,"method":"…","params":[…]}`.
package struct RPCCall: Sendable, Equatable {
  package var method: String
  package var params: [JSONValue]
  /// The request's `id`. Requests read by `RPCEnvelope` always have one: aria2 refuses a
  /// request without (a JSON-RPC notification) as invalid, and runs nothing for it.
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
  /// Invalid Request one, as aria2 answers them.
  package static func parse(_ body: some Collection<UInt8>) -> RPCEnvelope {
    do throws(JSONParseError) {
      let json = try JSONValue.parse(body)
      // aria2's streaming parser cannot tell where a number at the very end of the body ends,
      // so it answers such a body (`42`) with a Parse error; with a byte after it, Invalid Request.
      if Self.isNumber(json), let last = body.reversed().first, !Self.isWhitespace(last) {
        return .single(.invalid(.parseError, id: .null))
      }
      return RPCEnvelope(json: json)
    } catch {
      return .single(.invalid(.parseError, id: .null))
    }
  }

  /// As aria2 reads them: an array is a batch whose objects are answered in order (elements that
  /// are not objects are skipped, so `[]` is answered `[]`); anything else is one request.
  package init(json: JSONValue) {
    switch json {
    case .array(let elements) where elements.count > Self.maximumBatch:
      self = .single(.invalid(.invalidRequest, id: .null))
    case .array(let elements):
      self = .batch(
        elements.compactMap { element in
          guard case .object = element else { return nil }
          return Self.item(element)
        })
    default:
      self = .single(Self.item(json))
    }
  }

  private static func isNumber(_ json: JSONValue) -> Bool {
    switch json {
    case .integer, .double, .number: true
    default: false
    }
  }

  private static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// Validates one request object. Lenient where aria2 is (a missing `jsonrpc` member is
  /// accepted), strict where JSON-RPC 2.0 is (an id must be a string, a number or null). A
  /// request without `id` is refused as aria2 refuses it (Invalid Request, nothing run), though
  /// JSON-RPC 2.0 would run it as a notification: clients written for aria2 expect the refusal.
  static func item(_ json: JSONValue) -> RPCItem {
    guard case .object(let object) = json else { return .invalid(.invalidRequest, id: .null) }
    let id: JSONValue
    switch object["id"] {
    case nil: return .invalid(.invalidRequest, id: .null)
    case .some(let value):
      switch value {
      case .string, .integer, .double, .number, .null: id = value
      default: return .invalid(.invalidRequest, id: .null)
      }
    }
    if let version = object["jsonrpc"], version != .string("2.0") {
      return .invalid(.invalidRequest, id: id)
    }
    guard case .string(let method) = object["method"] else {
      return .invalid(.invalidRequest, id: id)
    }
    switch object["params"] {
    case nil: return .call(RPCCall(method: method, params: [], id: id))
    case .array(let params): return .call(RPCCall(method: method, params: params, id: id))
    default: return .invalid(.invalidParams, id: id)  // Named parameters: aria2 has none.
    }
  }
}
