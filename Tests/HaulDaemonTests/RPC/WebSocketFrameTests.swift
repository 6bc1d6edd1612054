import HaulRPC
import Testing

/// A frame as a client sends it: masked with `mask`, lengths in the shortest form unless told.
func clientFrame(
  _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D],
  masked: Bool = true, rsv: UInt8 = 0, longLength: Bool = false
) -> [UInt8] {
  var out: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
  let maskBit: UInt8 = masked ? 0x80 : 0
  if payload.count < 126 && !longLength {
    out.append(maskBit | UInt8(payload.count))
  } else if payload.count <= 0xFFFF && !longLength {
    out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
  } else {
    out.append(maskBit | 127)
    for shift in stride(from: 56, through: 0, by: -8) {
      out.append(UInt8((UInt64(payload.count) >> UInt64(shift)) & 0xFF))
    }
  }
  if masked {
    out += mask
    out += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
  } else {
    out += payload
  }
  return out
}

@Suite struct WebSocketFrameParserTests {
  private func parse(_ bytes: [UInt8], limit: Int = 1 << 20) -> [WebSocketEvent] {
    var parser = WebSocketFrameParser(maximumMessage: limit)
    return parser.consume(bytes)
  }

  private func failure(_ bytes: [UInt8], limit: Int = 1 << 20) -> WebSocketFailure? {
    guard case .failed(let failure) = parse(bytes, limit: limit).last else { return nil }
    return failure
  }

  @Test func maskedTextMessage() throws {
    #expect(
      parse(clientFrame(1, Array("Hello".utf8))) == [.message(text: true, payload: Array("Hello".utf8))])
  }

  @Test func rfcExampleFrame() throws {
    // RFC 6455 section 5.7: a masked "Hello".
    let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
    #expect(parse(bytes) == [.message(text: true, payload: Array("Hello".utf8))])
  }

  @Test func fragmentsJoinAroundAPing() throws {
    let bytes =
      clientFrame(1, Array("Hel".utf8), fin: false) + clientFrame(9, [1, 2])
      + clientFrame(0, Array("lo".utf8))
    #expect(parse(bytes) == [.ping([1, 2]), .message(text: true, payload: Array("Hello".utf8))])
  }

  @Test func byteByByteGivesTheSameEvents() throws {
    let payload = [UInt8](repeating: 0x61, count: 300)
    let bytes =
      clientFrame(1, payload) + clientFrame(10, []) + clientFrame(2, [0, 255], fin: false)
      + clientFrame(0, [7])
      + clientFrame(8, [0x03, 0xE8] + Array("bye".utf8))
    var parser = WebSocketFrameParser(maximumMessage: 1 << 20)
    var events: [WebSocketEvent] = []
    for byte in bytes { events += parser.consume([byte]) }
    #expect(events == (parse(bytes)))
    #expect(
      events == [
        .message(text: true, payload: payload), .pong([]), .message(text: false, payload: [0, 255, 7]),
        .close(code: 1000, reason: "bye"),
      ])
    #expect(parser.isFinished)
  }

  @Test func sixteenAndSixtyFourBitLengths() throws {
    let medium = [UInt8](repeating: 0x62, count: 70_000)
    #expect(
      parse(clientFrame(2, [UInt8](repeating: 1, count: 126))) == [
        .message(text: false, payload: [UInt8](repeating: 1, count: 126))
      ])
    #expect(parse(clientFrame(2, medium)) == [.message(text: false, payload: medium)])
  }

  @Test func emptyCloseAndEmptyMessage() throws {
    #expect(
      parse(clientFrame(1, []) + clientFrame(8, [])) == [
        .message(text: true, payload: []), .close(code: nil, reason: ""),
      ])
  }

  @Test func bytesAfterACloseAreIgnored() throws {
    #expect(parse(clientFrame(8, []) + clientFrame(1, Array("x".utf8))) == [.close(code: nil, reason: "")])
  }

  @Test func protocolViolationsClose1002() {
    let violations: [(String, [UInt8])] = [
      ("unmasked", clientFrame(1, [1], masked: false)),
      ("reserved bit", clientFrame(1, [1], rsv: 4)),
      ("unknown opcode", clientFrame(3, [1])),
      ("fragmented ping", clientFrame(9, [1], fin: false)),
      ("long ping", clientFrame(9, [UInt8](repeating: 0, count: 126))),
      ("continuation first", clientFrame(0, [1])),
      ("text inside fragments", clientFrame(1, [0x61], fin: false) + clientFrame(1, [0x62])),
      ("non-minimal 16-bit", [0x81, 0x80 | 126, 0, 5, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 5)),
      ("non-minimal 64-bit", clientFrame(2, [UInt8](repeating: 0, count: 200), longLength: true)),
      ("63-bit overflow", [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
      ("close of 1 byte", clientFrame(8, [3])),
      ("close code 1005", clientFrame(8, [0x03, 0xED])),
      ("close code 999", clientFrame(8, [0x03, 0xE7])),
    ]
    for (name, bytes) in violations {
      #expect(failure(bytes)?.code == WebSocketCloseCode.protocolError, "\(name)")
    }
  }

  @Test func invalidUTF8Closes1007() {
    #expect(failure(clientFrame(1, [0xC3, 0x28]))?.code == WebSocketCloseCode.invalidPayload)
    #expect(failure(clientFrame(8, [0x03, 0xE8, 0xFF]))?.code == WebSocketCloseCode.invalidPayload)
    // A character split across fragments is fine.
    #expect(failure(clientFrame(1, [0xC3], fin: false) + clientFrame(0, [0xA9])) == nil)
  }

  @Test func oversizedMessagesClose1009BeforeTheirBytesArrive() {
    #expect(
      failure(clientFrame(1, [UInt8](repeating: 0x61, count: 11)), limit: 10)?.code
        == WebSocketCloseCode.messageTooBig)
    #expect(
      failure(
        clientFrame(1, [UInt8](repeating: 0x61, count: 6), fin: false)
          + clientFrame(0, [0x61, 0x61, 0x61, 0x61, 0x61]), limit: 10)?.code
        == WebSocketCloseCode.messageTooBig)
    // Only the header of a frame claiming 2^62 bytes has to arrive for the refusal.
    let header: [UInt8] = [0x81, 0xFF, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]
    #expect(failure(header)?.code == WebSocketCloseCode.messageTooBig)
  }

  @Test func afterAFailureNothingMoreIsRead() {
    var parser = WebSocketFrameParser(maximumMessage: 100)
    #expect(parser.consume(clientFrame(3, [])) == [.failed(WebSocketFailure(1002, "unknown opcode"))])
    #expect(parser.consume(clientFrame(1, [0x61])) == [])
  }

  @Test func eventsBeforeAFailureAreKept() {
    // A ping, then a text message that is not UTF-8, in one read.
    #expect(
      parse(clientFrame(9, [4]) + clientFrame(1, [0xFF]))
        == [.ping([4]), .failed(WebSocketFailure(1007, "text message is not UTF-8"))])
  }
}

@Suite struct WebSocketFrameWriterTests {
  @Test(arguments: [0, 1, 125, 126, 65535, 65536])
  func serverFramesAreUnmaskedWithMinimalLengths(count: Int) {
    let frame = WebSocketFrameWriter.frame(.text, payload: [UInt8](repeating: 0x61, count: count))
    #expect(frame[0] == 0x81)
    #expect(frame[1] & 0x80 == 0)
    let headerLength = count < 126 ? 2 : count <= 65535 ? 4 : 10
    #expect(frame.count == headerLength + count)
    let encodedLength =
      switch headerLength {
      case 2: Int(frame[1])
      case 4: Int(frame[2]) << 8 | Int(frame[3])
      default: frame[2..<10].reduce(0) { $0 << 8 | Int($1) }
      }
    #expect(encodedLength == count)
    #expect(frame[1] & 0x7F == (count < 126 ? UInt8(count) : count <= 65535 ? 126 : 127))
  }

  @Test func closeCarriesCodeAndAReasonCutOnACharacter() {
    let frame = WebSocketFrameWriter.close(code: 1009, reason: String(repeating: "é", count: 100))
    #expect(frame[0] == 0x88)
    #expect(Int(frame[1]) <= 125)
    #expect(Array(frame[2...3]) == [0x03, 0xF1])
    #expect(String(validating: frame[4...], as: UTF8.self) != nil)
  }
}

@Suite struct WebSocketHandshakeTests {
  private func headers(_ values: [String: String]) -> (String) -> String? {
    { name in values.first { $0.key.lowercased() == name.lowercased() }?.value }
  }

  private let upgrade = [
    "Upgrade": "websocket", "Connection": "keep-alive, Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
  ]

  @Test func aValidUpgradeIsAccepted() {
    #expect(
      WebSocketHandshake.verdict(isGet: true, header: headers(upgrade))
        == .accept(key: "dGhlIHNhbXBsZSBub25jZQ=="))
  }

  @Test func plainRequestsAreNotUpgrades() {
    #expect(WebSocketHandshake.verdict(isGet: true, header: headers([:])) == .notUpgrade)
    #expect(WebSocketHandshake.verdict(isGet: true, header: headers(["Upgrade": "websocket"])) == .notUpgrade)
  }

  @Test func badHandshakesAreRefused() {
    var wrongVersion = upgrade
    wrongVersion["Sec-WebSocket-Version"] = "8"
    var shortKey = upgrade
    shortKey["Sec-WebSocket-Key"] = "c2hvcnQ="
    #expect(
      WebSocketHandshake.verdict(isGet: false, header: headers(upgrade))
        == .refuse(status: 400, reason: "a WebSocket handshake is a GET request"))
    #expect(
      WebSocketHandshake.verdict(isGet: true, header: headers(wrongVersion))
        == .refuse(status: 426, reason: "only WebSocket version 13 is supported"))
    guard case .refuse(400, _) = WebSocketHandshake.verdict(isGet: true, header: headers(shortKey)) else {
      Issue.record("a 5-byte key accepted")
      return
    }
  }
}
