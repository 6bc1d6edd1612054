import FoundationEssentials
import HaulRPC
import HaulTestSupport
import Testing

/// A WebSocket client for tests: masks what it sends, reads the server's frames one by one.
/// Blocking: use it inside `blocking { }`.
final class WebSocketTestClient: @unchecked Sendable {
  let connection: RawHTTPConnection
  private var buffer: [UInt8] = []
  let handshake: RawResponse

  /// Connects and upgrades; `handshake` holds the server's answer (101 unless refused).
  init(port: UInt16, path: String = "/jsonrpc", headers: [(String, String)] = [], timeout: Double = 10) throws
  {
    connection = try RawHTTPConnection(port: Int(port), timeout: timeout)
    var all: [(String, String)] = [
      ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
      ("Sec-WebSocket-Version", "13"),
    ]
    for header in headers {
      all.removeAll { $0.0.lowercased() == header.0.lowercased() }
      all.append(header)
    }
    handshake = try connection.request(method: "GET", path: path, headers: all)
  }

  func send(_ text: String) throws { try sendFrame(opcode: 1, Array(text.utf8)) }

  func sendFrame(opcode: UInt8, _ payload: [UInt8], fin: Bool = true) throws {
    try connection.sendRaw(clientFrame(opcode, payload, fin: fin))
  }

  /// The next frame from the server: opcode and payload; nil if the connection ended first.
  func readFrame() -> (opcode: UInt8, payload: [UInt8])? {
    while true {
      if let frame = takeFrame() { return frame }
      let more = connection.readBytes(atLeast: 1)
      if more.isEmpty { return nil }
      buffer += more
    }
  }

  /// The next text message parsed as JSON, skipping pings.
  func readJSON() -> JSONValue? {
    while let frame = readFrame() {
      if frame.opcode == 1 { return try? JSONValue.parse(frame.payload) }
      if frame.opcode == 8 { return nil }
    }
    return nil
  }

  private func takeFrame() -> (opcode: UInt8, payload: [UInt8])? {
    guard buffer.count >= 2 else { return nil }
    if buffer[1] & 0x80 != 0 { Issue.record("the server masked a frame") }
    var length = Int(buffer[1] & 0x7F)
    var offset = 2
    if length == 126 {
      guard buffer.count >= 4 else { return nil }
      length = Int(buffer[2]) << 8 | Int(buffer[3])
      offset = 4
    } else if length == 127 {
      guard buffer.count >= 10 else { return nil }
      length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
      offset = 10
    }
    guard buffer.count >= offset + length else { return nil }
    let frame = (opcode: buffer[0] & 0x0F, payload: Array(buffer[offset..<offset + length]))
    buffer.removeFirst(offset + length)
    return frame
  }
}
