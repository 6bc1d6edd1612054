import CEvent
import HaulRPC

/// One upgraded connection: JSON-RPC over WebSocket text frames, aria2's notifications, pings.
///
/// Frames are read with `WebSocketFrameParser`; each message goes, in order, to a task that
/// answers it with the `RPCService` (one message at a time per client, as aria2 answers them),
/// and the answer comes back through the loop. With `maximumWebSocketInFlight` messages waiting,
/// reading pauses until answers go out. A client that leaves bytes unread past
/// `maximumWebSocketBacklog` is closed as too slow; one that answers no ping for two intervals is
/// closed as gone.
///
/// Threads: loop thread only; the task talks to it through the loop.
final class WebSocketSession {
  let id: Int
  let bufferevent: OpaquePointer
  private let connection: OpaquePointer
  private unowned let server: RPCHTTPServer
  private var parser: WebSocketFrameParser
  private let messages: AsyncStream<[UInt8]>.Continuation
  private let answering: Task<Void, Never>
  private var inFlight = 0
  private var readingPaused = false
  private var closing = false
  private var ended = false
  private var lastHeard = ContinuousClock.now
  /// Notifications that came while a message was being answered: sent after its answer, as
  /// aria2 sends them, so that a client learns a gid from `addUri` before its `onDownloadStart`.
  private var held: [[UInt8]] = []
  /// Held notifications are sent once this many wait: a slow call must not hold them unbounded.
  static let maximumHeld = 1024

  init(id: Int, connection: OpaquePointer, bufferevent: OpaquePointer, server: RPCHTTPServer) {
    self.id = id
    self.connection = connection
    self.bufferevent = bufferevent
    self.server = server
    parser = WebSocketFrameParser(maximumMessage: server.configuration.maximumRequestSize)
    let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
    messages = continuation
    answering = Task(executorPreference: WorkerExecutor.shared) {
      [loop = server.loop, service = server.service] in
      for await message in stream {
        let response = await service.respond(to: message)
        loop.execute { server in server.sessions[id]?.answered(response) }
      }
    }
  }

  func start() {
    let context = Unmanaged.passUnretained(self).toOpaque()
    cevent_bufferevent_setcb(
      bufferevent,
      { _, context in
        guard let context else { return }
        Unmanaged<WebSocketSession>.fromOpaque(context).takeUnretainedValue().readable()
      },
      { _, context in
        guard let context else { return }
        Unmanaged<WebSocketSession>.fromOpaque(context).takeUnretainedValue().flushed()
      },
      { _, _, context in
        guard let context else { return }
        // EOF, an error or a timeout: the client is gone.
        Unmanaged<WebSocketSession>.fromOpaque(context).takeUnretainedValue().end()
      }, context)
    // No timeouts of evhttp's: a WebSocket may be idle for hours; pings tell if it is alive.
    _ = cevent_bufferevent_set_timeouts(bufferevent, nil, nil)
    _ = cevent_bufferevent_enable(bufferevent, Int16(CEVENT_EV_READ | CEVENT_EV_WRITE))
    // Frames sent right behind the handshake may already be buffered.
    if let input = cevent_bufferevent_input(bufferevent), cevent_buffer_length(input) > 0 { readable() }
  }

  // MARK: - Reading

  private func readable() {
    guard !ended, let input = cevent_bufferevent_input(bufferevent) else { return }
    let bytes = RPCHTTPServer.bytes(of: input)
    _ = cevent_buffer_drain(input, bytes.count)
    guard !closing else { return }
    lastHeard = .now
    for event in parser.consume(bytes) {
      switch event {
      case .message(_, let payload):
        // aria2 reads binary messages as JSON too.
        inFlight += 1
        messages.yield(payload)
        if inFlight >= server.configuration.maximumWebSocketInFlight && !readingPaused {
          readingPaused = true
          _ = cevent_bufferevent_disable(bufferevent, Int16(CEVENT_EV_READ))
        }
      case .ping(let payload): write(WebSocketFrameWriter.frame(.pong, payload: payload))
      case .pong: break
      case .close(let code, _):
        // Echo the client's code (RFC 6455 section 5.5.1), then end once it is sent.
        close(code: code ?? WebSocketCloseCode.normal, reason: "")
      case .failed(let failure):
        close(code: failure.code, reason: failure.reason)
      }
    }
  }

  private func answered(_ response: RPCResponse) {
    inFlight -= 1
    if let json = response.json { sendText(json.serialized) }
    sendHeld()
    if readingPaused && inFlight < server.configuration.maximumWebSocketInFlight && !closing {
      readingPaused = false
      _ = cevent_bufferevent_enable(bufferevent, Int16(CEVENT_EV_READ))
    }
  }

  // MARK: - Writing

  /// Sends a notification, after the answer of the message being answered if there is one.
  func notify(_ text: [UInt8]) {
    guard inFlight > 0 else { return sendText(text) }
    held.append(text)
    if held.count >= Self.maximumHeld { sendHeld() }
  }

  private func sendHeld() {
    let notifications = held
    held.removeAll()
    for text in notifications { sendText(text) }
  }

  func sendText(_ text: [UInt8]) {
    guard !closing else { return }
    write(WebSocketFrameWriter.frame(.text, payload: text))
    if let output = cevent_bufferevent_output(bufferevent),
      cevent_buffer_length(output) > server.configuration.maximumWebSocketBacklog
    {
      close(code: WebSocketCloseCode.policyViolation, reason: "client too slow: answers not read")
    }
  }

  private func write(_ frame: [UInt8]) {
    guard !ended else { return }
    _ = frame.withUnsafeBytes { cevent_bufferevent_write(bufferevent, $0.baseAddress, $0.count) }
  }

  private func flushed() {
    if closing { end() }
  }

  /// Pings an idle client; ends one that answered nothing since the ping before.
  func keepAlive() {
    guard !closing else { return }
    let silent = (ContinuousClock.now - lastHeard) / .seconds(1)
    if silent > 2 * server.configuration.webSocketPingInterval {
      close(code: WebSocketCloseCode.goingAway, reason: "no answer to pings")
    } else if silent > server.configuration.webSocketPingInterval * 0.9 {
      write(WebSocketFrameWriter.frame(.ping, payload: []))
    }
  }

  // MARK: - Ending

  /// Sends a close frame and ends the connection once it is out.
  func close(code: UInt16, reason: String) {
    guard !closing && !ended else { return }
    closing = true
    _ = cevent_bufferevent_disable(bufferevent, Int16(CEVENT_EV_READ))
    write(WebSocketFrameWriter.close(code: code, reason: reason))
    // A client that reads nothing must not hold the connection: give it the request timeout.
    var timeout = timeval(seconds: server.configuration.requestTimeout)
    _ = cevent_bufferevent_set_timeouts(bufferevent, nil, &timeout)
  }

  private func end() {
    guard !ended else { return }
    ended = true
    messages.finish()
    answering.cancel()
    cevent_bufferevent_setcb(bufferevent, nil, nil, nil, nil)
    cevent_connection_free(connection)
    server.sessionEnded(self)
  }

  /// At shutdown, when evhttp is about to free the connection itself.
  func abandon() {
    ended = true
    messages.finish()
    answering.cancel()
    cevent_bufferevent_setcb(bufferevent, nil, nil, nil, nil)
  }
}
