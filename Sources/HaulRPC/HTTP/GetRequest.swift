import FoundationEssentials

/// aria2's GET form of JSON-RPC: `GET /jsonrpc?method=M&id=ID&params=BASE64` (params: the
/// base64 of the JSON array, percent-encoded), with `jsoncallback=NAME` for a JSONP reply.
/// Without `method` and `id`, `params` holds a whole batch.
package struct GetRequest: Sendable, Equatable {
  package var envelope: RPCEnvelope
  /// The JSONP function name, already checked to be a plain JavaScript name.
  package var callback: String?

  package enum Failure: Error, Equatable, Sendable {
    /// `jsoncallback` is not a plain name (it would be pasted into a script).
    case badCallback
  }

  /// Longest JSONP function name accepted.
  static let maximumCallback = 128

  package static func parse(query: String?) throws(Failure) -> GetRequest {
    var method: String?
    var id: String?
    var params: String?
    var callback: String?
    for pair in (query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
      guard let equals = pair.firstIndex(of: "=") else { continue }
      let value = percentDecoded(pair[pair.index(after: equals)...])
      switch pair[..<equals] {
      case "method": method = value
      case "id": id = value
      case "params": params = value
      case "jsoncallback": callback = value
      default: continue
      }
    }
    if let callback, !isPlainName(callback) { throw .badCallback }

    let decodedParams: JSONValue?
    if let params {
      guard let bytes = base64Decoded(params) else {
        return GetRequest(envelope: .single(.invalid(.parseError, id: .null)), callback: callback)
      }
      do throws(JSONParseError) {
        decodedParams = try JSONValue.parse(bytes)
      } catch {
        return GetRequest(envelope: .single(.invalid(.parseError, id: .null)), callback: callback)
      }
    } else {
      decodedParams = nil
    }
    if method == nil && id == nil {
      // Nothing at all asked: aria2 answers Invalid Request.
      guard let decodedParams else {
        return GetRequest(envelope: .single(.invalid(.invalidRequest, id: .null)), callback: callback)
      }
      return GetRequest(envelope: RPCEnvelope(json: decodedParams), callback: callback)
    }
    var object = JSONObject()
    if let method { object["method"] = .string(method) }
    if let id { object["id"] = .string(id) }
    if let decodedParams { object["params"] = decodedParams }
    return GetRequest(envelope: RPCEnvelope(json: .object(object)), callback: callback)
  }

  /// %XX escapes decoded; '+' stays '+' (base64 uses it); a malformed escape is kept as is.
  static func percentDecoded(_ text: Substring) -> String {
    var bytes: [UInt8] = []
    let utf8 = Array(text.utf8)
    var index = 0
    while index < utf8.count {
      if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
        let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
      {
        bytes.append(high << 4 | low)
        index += 3
      } else {
        bytes.append(utf8[index])
        index += 1
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }

  /// Standard or URL-safe base64, padding optional.
  static func base64Decoded(_ text: String) -> [UInt8]? {
    var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
    standard.append(String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4))
    guard let data = Data(base64Encoded: standard) else { return nil }
    return Array(data)
  }

  /// A JavaScript name, optionally dotted: `cb`, `jQuery123_456`, `window.handlers.reply`.
  static func isPlainName(_ name: String) -> Bool {
    guard !name.isEmpty, name.utf8.count <= maximumCallback else { return false }
    var previousWasDot = true
    for byte in name.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"),
        UInt8(ascii: "$"):
        previousWasDot = false
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        if previousWasDot { return false }
      case UInt8(ascii: "."):
        if previousWasDot { return false }
        previousWasDot = true
      default: return false
      }
    }
    return !previousWasDot
  }
}
