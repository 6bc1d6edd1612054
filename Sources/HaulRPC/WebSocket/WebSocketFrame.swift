/// RFC 6455 frame opcodes.
package enum WebSocketOpcode: UInt8, Sendable {
  case continuation = 0x0
  case text = 0x1
  case binary = 0x2
  case close = 0x8
  case ping = 0x9
  case pong = 0xA

  package var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Close status codes (RFC 6455 section 7.4).
package enum WebSocketCloseCode {
  package static let normal: UInt16 = 1000
  package static let goingAway: UInt16 = 1001
  package static let protocolError: UInt16 = 1002
  package static let invalidPayload: UInt16 = 1007
  package static let policyViolation: UInt16 = 1008
  package static let messageTooBig: UInt16 = 1009
  package static let internalError: UInt16 = 1011

  /// Codes a peer may send in a close frame: the defined ones, and 3000–4999 for libraries
  /// and applications. 1005, 1006 and 1015 are never sent on the wire.
  package static func isValidOnTheWire(_ code: UInt16) -> Bool {
    switch code {
    case 1000...1003, 1007...1014, 3000...4999: true
    default: false
    }
  }
}

/// Frames a server sends: never masked, never fragmented.
package enum WebSocketFrameWriter {
  package static func frame(_ opcode: WebSocketOpcode, payload: some Collection<UInt8>) -> [UInt8] {
    var out: [UInt8] = [0x80 | opcode.rawValue]
    let count = payload.count
    if count < 126 {
      out.append(UInt8(count))
    } else if count <= Int(UInt16.max) {
      out.append(126)
      out.append(UInt8(count >> 8))
      out.append(UInt8(count & 0xFF))
    } else {
      out.append(127)
      for shift in stride(from: 56, through: 0, by: -8) {
        out.append(UInt8((UInt64(count) >> UInt64(shift)) & 0xFF))
      }
    }
    out.append(contentsOf: payload)
    return out
  }

  /// A close frame with a code and a reason cut to fit the 125 bytes of a control frame.
  package static func close(code: UInt16, reason: String = "") -> [UInt8] {
    var payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
    var reasonBytes = Array(reason.utf8.prefix(123))
    while String(validating: reasonBytes, as: UTF8.self) == nil { reasonBytes.removeLast() }
    payload += reasonBytes
    return frame(.close, payload: payload)
  }
}
