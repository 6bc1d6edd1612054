/// What the frames from a client add up to.
package enum WebSocketEvent: Sendable, Equatable {
  /// A whole data message (fragments joined); text is valid UTF-8.
  case message(text: Bool, payload: [UInt8])
  case ping([UInt8])
  case pong([UInt8])
  /// The client's close frame: its code (nil when it sent none) and reason.
  case close(code: UInt16?, reason: String)
  /// The client broke the protocol: close with this code. Always the last event.
  case failed(WebSocketFailure)
}

/// Why the connection must be closed, with the close code to send.
package struct WebSocketFailure: Error, Sendable, Equatable {
  package let code: UInt16
  package let reason: String

  package init(_ code: UInt16, _ reason: String) {
    self.code = code
    self.reason = reason
  }
}

/// Reads the frames a client sends (RFC 6455, server side), in pieces as they arrive.
///
/// Enforced: frames masked, reserved bits clear (no extension is negotiated), known opcodes,
/// control frames unfragmented and at most 125 bytes, lengths minimally encoded, fragments in
/// order, messages no larger than `maximumMessage` (checked before the bytes are kept), text
/// valid UTF-8, close frames well formed. Memory held is at most one message.
package struct WebSocketFrameParser: Sendable {
  private struct Header {
    var fin: Bool
    var opcode: WebSocketOpcode
    var mask: [UInt8]
    var length: Int
  }

  package let maximumMessage: Int
  private var headerBytes: [UInt8] = []
  private var header: Header?
  private var received = 0
  private var controlPayload: [UInt8] = []
  /// The data message being assembled: its kind and bytes so far.
  private var message: (text: Bool, bytes: [UInt8])?
  /// Set after a close frame or a failure: later bytes are ignored.
  package private(set) var isFinished = false

  package init(maximumMessage: Int) { self.maximumMessage = maximumMessage }

  /// Consumes the bytes; returns the events they complete, in order, the events before a
  /// failure included. After a failure or a close frame nothing more is read.
  package mutating func consume(_ bytes: [UInt8]) -> [WebSocketEvent] {
    var events: [WebSocketEvent] = []
    do throws(WebSocketFailure) {
      try consume(bytes, into: &events)
    } catch {
      isFinished = true
      events.append(.failed(error))
    }
    return events
  }

  private mutating func consume(_ bytes: [UInt8], into events: inout [WebSocketEvent])
    throws(WebSocketFailure)
  {
    var input = bytes[...]
    while !isFinished {
      if header == nil {
        guard readHeaderBytes(from: &input) else { break }
        try startFrame()
      }
      guard let current = header else { break }
      let take = min(current.length - received, input.count)
      if take > 0 {
        var chunk = Array(input.prefix(take))
        input = input.dropFirst(take)
        for index in chunk.indices { chunk[index] ^= current.mask[(received + index) & 3] }
        received += take
        if current.opcode.isControl { controlPayload += chunk } else { message?.bytes += chunk }
      }
      guard received == current.length else { break }
      if let event = try finishFrame(current) { events.append(event) }
    }
  }

  /// Moves header bytes from the input until the header is whole; false if more are needed.
  private mutating func readHeaderBytes(from input: inout ArraySlice<UInt8>) -> Bool {
    while true {
      let needed = Self.headerLength(headerBytes)
      if headerBytes.count == needed { return true }
      guard let byte = input.first else { return false }
      headerBytes.append(byte)
      input = input.dropFirst()
    }
  }

  /// Bytes of a header given its first bytes (2 until the second byte is known).
  private static func headerLength(_ bytes: [UInt8]) -> Int {
    guard bytes.count >= 2 else { return 2 }
    let extended =
      switch bytes[1] & 0x7F {
      case 126: 2
      case 127: 8
      default: 0
      }
    return 2 + extended + (bytes[1] & 0x80 != 0 ? 4 : 0)
  }

  private mutating func startFrame() throws(WebSocketFailure) {
    let bytes = headerBytes
    headerBytes.removeAll(keepingCapacity: true)
    let fin = bytes[0] & 0x80 != 0
    guard bytes[0] & 0x70 == 0 else {
      throw WebSocketFailure(WebSocketCloseCode.protocolError, "reserved bits set")
    }
    guard let opcode = WebSocketOpcode(rawValue: bytes[0] & 0x0F) else {
      throw WebSocketFailure(WebSocketCloseCode.protocolError, "unknown opcode")
    }
    guard bytes[1] & 0x80 != 0 else {
      throw WebSocketFailure(WebSocketCloseCode.protocolError, "client frames must be masked")
    }
    var length = UInt64(bytes[1] & 0x7F)
    var offset = 2
    if length == 126 {
      length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
      offset = 4
      guard length >= 126 else {
        throw WebSocketFailure(WebSocketCloseCode.protocolError, "length not minimal")
      }
    } else if length == 127 {
      length = bytes[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
      offset = 10
      guard length >> 63 == 0 else {
        throw WebSocketFailure(WebSocketCloseCode.protocolError, "length too large")
      }
      guard length > UInt64(UInt16.max) else {
        throw WebSocketFailure(WebSocketCloseCode.protocolError, "length not minimal")
      }
    }
    if opcode.isControl {
      guard fin else { throw WebSocketFailure(WebSocketCloseCode.protocolError, "fragmented control frame") }
      guard length <= 125 else {
        throw WebSocketFailure(WebSocketCloseCode.protocolError, "control frame too long")
      }
      controlPayload.removeAll(keepingCapacity: true)
    } else {
      switch (opcode, message) {
      case (.continuation, nil):
        throw WebSocketFailure(WebSocketCloseCode.protocolError, "continuation without a message")
      case (.text, .some), (.binary, .some):
        throw WebSocketFailure(WebSocketCloseCode.protocolError, "new message inside a fragmented one")
      case (.text, nil), (.binary, nil):
        message = (opcode == .text, [])
      default: break
      }
      let held = message?.bytes.count ?? 0
      guard length <= UInt64(maximumMessage - held) else {
        throw WebSocketFailure(
          WebSocketCloseCode.messageTooBig, "message larger than \(maximumMessage) bytes")
      }
    }
    header = Header(fin: fin, opcode: opcode, mask: Array(bytes[offset..<offset + 4]), length: Int(length))
    received = 0
  }

  private mutating func finishFrame(_ frame: Header) throws(WebSocketFailure) -> WebSocketEvent? {
    header = nil
    switch frame.opcode {
    case .ping: return .ping(controlPayload)
    case .pong: return .pong(controlPayload)
    case .close:
      isFinished = true
      return try Self.closeEvent(controlPayload)
    case .text, .binary, .continuation:
      guard frame.fin, let whole = message else { return nil }
      message = nil
      if whole.text && String(validating: whole.bytes, as: UTF8.self) == nil {
        throw WebSocketFailure(WebSocketCloseCode.invalidPayload, "text message is not UTF-8")
      }
      return .message(text: whole.text, payload: whole.bytes)
    }
  }

  private static func closeEvent(_ payload: [UInt8]) throws(WebSocketFailure) -> WebSocketEvent {
    if payload.isEmpty { return .close(code: nil, reason: "") }
    guard payload.count >= 2 else {
      throw WebSocketFailure(WebSocketCloseCode.protocolError, "close frame of 1 byte")
    }
    let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
    guard WebSocketCloseCode.isValidOnTheWire(code) else {
      throw WebSocketFailure(WebSocketCloseCode.protocolError, "invalid close code \(code)")
    }
    guard let reason = String(validating: payload.dropFirst(2), as: UTF8.self) else {
      throw WebSocketFailure(WebSocketCloseCode.invalidPayload, "close reason is not UTF-8")
    }
    return .close(code: code, reason: reason)
  }
}
