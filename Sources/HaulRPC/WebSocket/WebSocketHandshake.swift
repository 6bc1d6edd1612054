import FoundationEssentials

/// The server side of the WebSocket opening handshake (RFC 6455 section 4.2), judged from the
/// request's headers as aria2 judges it.
package enum WebSocketHandshake {
  /// RFC 6455's fixed GUID, appended to the client's key before hashing.
  package static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

  package enum Verdict: Sendable, Equatable {
    /// Not an upgrade request: plain HTTP.
    case notUpgrade
    /// Switch protocols, answering with this Sec-WebSocket-Accept input (key + GUID, to hash).
    case accept(key: String)
    /// Refuse with this status (426 asks for version 13).
    case refuse(status: Int, reason: String)
  }

  /// `header` looks a request header up by name (case-insensitive), nil when absent.
  package static func verdict(isGet: Bool, header: (String) -> String?) -> Verdict {
    guard hasToken("websocket", in: header("Upgrade")), hasToken("upgrade", in: header("Connection")) else {
      return .notUpgrade
    }
    guard isGet else { return .refuse(status: 400, reason: "a WebSocket handshake is a GET request") }
    guard let key = header("Sec-WebSocket-Key")?.trimmingASCIIWhitespace(),
      let decoded = Data(base64Encoded: key), decoded.count == 16
    else {
      return .refuse(status: 400, reason: "Sec-WebSocket-Key must be 16 bytes in base64")
    }
    guard header("Sec-WebSocket-Version")?.trimmingASCIIWhitespace() == "13" else {
      return .refuse(status: 426, reason: "only WebSocket version 13 is supported")
    }
    return .accept(key: key)
  }

  /// The Sec-WebSocket-Accept value: base64 of the SHA-1 of key + GUID (`sha1` computes it).
  package static func acceptValue(key: String, sha1: ([UInt8]) -> [UInt8]) -> String {
    Data(sha1(Array((key + guid).utf8))).base64EncodedString()
  }

  /// True when the comma-separated header value lists `token` (case-insensitive).
  static func hasToken(_ token: String, in value: String?) -> Bool {
    guard let value else { return false }
    return value.split(separator: ",").contains { $0.trimmingASCIIWhitespace().lowercased() == token }
  }
}
