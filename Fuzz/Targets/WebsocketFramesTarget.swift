// The WebSocket frame parser (client to server): never traps; the events do not depend on how
// the bytes are split; messages respect the size limit, text is UTF-8, and nothing follows a
// close frame or a failure.
//
// The first byte sets the size of the pieces the rest is fed in (1 to 256 bytes).

import HaulRPC

private let limit = 4096

private func feed(_ bytes: [UInt8], pieces: Int) -> [WebSocketEvent] {
  var parser = WebSocketFrameParser(maximumMessage: limit)
  var events: [WebSocketEvent] = []
  var start = 0
  while start < bytes.count {
    let end = min(bytes.count, start + pieces)
    let new = parser.consume(Array(bytes[start..<end]))
    require(new.isEmpty || !parser.isFinished || isFinal(new.last), "a close or a failure is not last")
    require(new.isEmpty || !events.contains(where: isFinal), "events after a close or a failure")
    events += new
    start = end
  }
  return events
}

private func isFinal(_ event: WebSocketEvent?) -> Bool {
  switch event {
  case .close, .failed: true
  default: false
  }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebsocketFrames(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzBytes(data, size)
  guard let first = input.first else { return 0 }
  let bytes = Array(input.dropFirst())
  let whole = feed(bytes, pieces: max(1, bytes.count))
  let split = feed(bytes, pieces: Int(first) + 1)
  require(whole == split, "splitting changed the events: \(whole) against \(split)")
  for event in whole {
    switch event {
    case .message(let text, let payload):
      require(payload.count <= limit, "message of \(payload.count) bytes")
      if text { require(String(validating: payload, as: UTF8.self) != nil, "text that is not UTF-8") }
    case .ping(let payload), .pong(let payload):
      require(payload.count <= 125, "control frame of \(payload.count) bytes")
    case .close(let code, _):
      if let code { require(WebSocketCloseCode.isValidOnTheWire(code), "close code \(code)") }
    case .failed(let failure):
      require([1002, 1007, 1009].contains(failure.code), "failure code \(failure.code)")
    }
  }
  return 0
}
