import CCurl
import Dispatch
import FoundationEssentials

/// The libcurl transport: every transfer of the process runs on one event thread that
/// drives one multi handle, so connections are shared and kept alive across transfers.
final class CurlTransport: Transport {
  /// The process-wide instance; its thread starts on first use and lives as long as the process.
  /// nil only when libcurl cannot even create its multi handle (out of memory at start).
  static let shared = CurlTransport()

  private enum Command: Sendable {
    case start(id: UInt64, TransferRequest, any TransferSink)
    case cancel(id: UInt64)
  }

  private struct Inbox {
    var commands: [Command] = []
    var nextID: UInt64 = 1
  }

  private let inbox = Locked(Inbox())
  private let multi: CurlMulti

  private init?() {
    _ = ccurl_global_init()
    guard let multi = CurlMulti() else { return nil }
    self.multi = multi
    let started = EventThread.start { [self] in
      CurlEventThread(multi: multi).run(takeCommands: takeCommands)
    }
    guard started else { return nil }
  }

  private func takeCommands() -> [Command] {
    inbox.withLock { box in
      let commands = box.commands
      box.commands.removeAll(keepingCapacity: true)
      return commands
    }
  }

  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle {
    let id = inbox.withLock { box in
      let id = box.nextID
      box.nextID += 1
      box.commands.append(.start(id: id, request, sink))
      return id
    }
    multi.wakeUp()
    return CurlTransferHandle(id: id, transport: self)
  }

  fileprivate func cancel(id: UInt64) {
    inbox.withLock { $0.commands.append(.cancel(id: id)) }
    multi.wakeUp()
  }

  /// Runs on the event thread only: owns the multi handle's transfers.
  private final class CurlEventThread {
    private let multi: CurlMulti
    private var transfers: [UInt64: CurlTransfer] = [:]
    private var idsByEasy: [UnsafeMutableRawPointer: UInt64] = [:]

    init(multi: CurlMulti) { self.multi = multi }

    func run(takeCommands: () -> [Command]) {
      while true {
        for command in takeCommands() {
          switch command {
          case .start(let id, let request, let sink): start(id: id, request, sink: sink)
          case .cancel(let id): finish(id: id, .cancelled)
          }
        }
        var running: Int32 = 0
        _ = ccurl_multi_perform(multi.pointer, &running)
        var queued: Int32 = 0
        while let message = ccurl_multi_info_read(multi.pointer, &queued) {
          guard message.pointee.msg == Int32(CCURLMSG_DONE),
            let easy = message.pointee.easy_handle,
            let id = idsByEasy[UnsafeMutableRawPointer(easy)]
          else { continue }
          finish(id: id, .curl(message.pointee.data.result))
        }
        var timeout: UInt64 = transfers.isEmpty ? 10_000_000_000 : 1_000_000_000
        let now = Monotonic.now()
        for (id, transfer) in transfers {
          if let wait = transfer.unpauseIfDue(now: now) { timeout = min(timeout, wait) }
          // libcurl's low-speed check averages over seconds; a stall is judged from the last byte instead.
          if transfer.isStalled(now: now) { finish(id: id, .stalled) }
        }
        _ = ccurl_multi_poll(multi.pointer, Int32(min(timeout / 1_000_000 + 1, 10_000)), nil)
      }
    }

    private func start(id: UInt64, _ request: TransferRequest, sink: any TransferSink) {
      do {
        let transfer = try CurlTransfer(request: request, sink: sink)
        let code = ccurl_multi_add_handle(multi.pointer, transfer.easy)
        guard code == 0 else {
          let text = String(cString: ccurl_multi_strerror(code))
          sink.transferDidFinish(
            head: nil, failure: TransportFailure(kind: .other, message: text, code: code))
          return
        }
        transfers[id] = transfer
        idsByEasy[UnsafeMutableRawPointer(transfer.easy)] = id
      } catch {
        sink.transferDidFinish(head: nil, failure: error)
      }
    }

    private func finish(id: UInt64, _ ending: CurlTransfer.Ending) {
      guard let transfer = transfers.removeValue(forKey: id) else { return }
      idsByEasy[UnsafeMutableRawPointer(transfer.easy)] = nil
      _ = ccurl_multi_remove_handle(multi.pointer, transfer.easy)
      transfer.finish(ending)
    }
  }
}

/// The multi handle. Only `curl_multi_wakeup` is called off the event thread;
/// libcurl documents that call as thread-safe, and the pointer never changes.
private final class CurlMulti: Sendable {
  nonisolated(unsafe) let pointer: OpaquePointer

  init?() {
    guard let multi = ccurl_multi_init() else { return nil }
    pointer = multi
    _ = ccurl_multi_setopt_long(multi, Int32(CCURLMOPT_MAXCONNECTS), 64)
  }

  func wakeUp() { _ = ccurl_multi_wakeup(pointer) }
}

private struct CurlTransferHandle: TransferHandle {
  let id: UInt64
  let transport: CurlTransport
  func cancel() { transport.cancel(id: id) }
}

/// One easy handle and its callbacks. Lives on the event thread only.
private final class CurlTransfer {
  let easy: OpaquePointer
  private let sink: any TransferSink
  private var headerList: UnsafeMutablePointer<ccurl_slist>?
  /// libcurl writes failure details here; it must stay at one address for the handle's life.
  private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CCURL_ERROR_SIZE) + 1)

  // The response being received; a new status line (redirect hop, 1xx) starts over.
  private var status: Int?
  private var headers = HTTPHeaders()
  private var head: ResponseHead?
  private var disposition: BodyDisposition?

  private let rateLimiter: RateLimiter?
  private let stallTimeout: UInt64
  /// When a byte (header or body) last arrived, or the transfer last left a rate-limit pause.
  private var lastActivity: UInt64
  /// When a transfer paused by the rate limiter may receive again (monotonic ns).
  private(set) var resumeAt: UInt64?

  init(request: TransferRequest, sink: any TransferSink) throws(TransportFailure) {
    guard let easy = ccurl_easy_init() else {
      throw TransportFailure(kind: .other, message: "libcurl could not create a handle", code: 27)
    }
    self.easy = easy
    self.sink = sink
    self.rateLimiter = request.rateLimiter
    self.stallTimeout = UInt64(max(0.001, request.stallTimeout) * 1e9)
    self.lastActivity = Monotonic.now()
    var failed: Int32 = 0
    func set(_ option: Int32, _ value: Int) {
      let code = ccurl_easy_setopt_long(easy, option, value)
      if code != 0 { failed = code }
    }
    func set(_ option: Int32, _ value: String) {
      let code = value.withCString { ccurl_easy_setopt_pointer(easy, option, $0) }
      if code != 0 { failed = code }
    }
    set(Int32(CCURLOPT_URL), request.url)
    set(Int32(CCURLOPT_NOSIGNAL), 1)
    set(Int32(CCURLOPT_HTTPGET), 1)
    set(Int32(CCURLOPT_FOLLOWLOCATION), 1)
    set(Int32(CCURLOPT_MAXREDIRS), request.maxRedirects)
    set(Int32(CCURLOPT_PROTOCOLS_STR), "http,https")
    set(Int32(CCURLOPT_REDIR_PROTOCOLS_STR), "http,https")
    set(Int32(CCURLOPT_USERAGENT), request.userAgent)
    set(Int32(CCURLOPT_TCP_KEEPALIVE), 1)
    set(Int32(CCURLOPT_BUFFERSIZE), request.receiveBufferSize)
    set(Int32(CCURLOPT_CONNECTTIMEOUT), max(1, Int(request.stallTimeout.rounded(.up))))
    set(Int32(CCURLOPT_SSL_VERIFYPEER), request.verifyTLS ? 1 : 0)
    set(Int32(CCURLOPT_SSL_VERIFYHOST), request.verifyTLS ? 2 : 0)
    for (name, value) in request.headers {
      guard let list = ccurl_slist_append(headerList, "\(name): \(value)") else {
        failed = Int32(CCURLE_OUT_OF_MEMORY)
        break
      }
      headerList = list
    }
    if let headerList {
      if ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_HTTPHEADER), headerList) != 0 { failed = 43 }
    }
    errorBuffer.initialize(repeating: 0, count: Int(CCURL_ERROR_SIZE) + 1)
    _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_ERRORBUFFER), errorBuffer)
    // Unretained: the event thread keeps this object alive until the handle is cleaned up.
    let me = Unmanaged.passUnretained(self).toOpaque()
    _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_HEADERDATA), me)
    _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_WRITEDATA), me)
    _ = ccurl_easy_setopt_callback(easy, Int32(CCURLOPT_HEADERFUNCTION), curlHeaderCallback)
    _ = ccurl_easy_setopt_callback(easy, Int32(CCURLOPT_WRITEFUNCTION), curlWriteCallback)
    if failed != 0 {
      let message = String(cString: ccurl_easy_strerror(failed))
      // deinit releases the handle, list and buffer: every stored property is set by now.
      throw TransportFailure(kind: failed == 3 ? .badURL : .other, message: message, code: failed)
    }
  }

  deinit {
    ccurl_easy_cleanup(easy)
    ccurl_slist_free_all(headerList)
    errorBuffer.deallocate()
  }

  func isStalled(now: UInt64) -> Bool {
    resumeAt == nil && now > lastActivity && now - lastActivity > stallTimeout
  }

  fileprivate func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
    lastActivity = Monotonic.now()
    var end = line.count
    while end > 0, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[0..<end]), as: UTF8.self)
    if text.hasPrefix("HTTP/") {
      let parts = text.split(separator: " ", maxSplits: 2)
      status = parts.count >= 2 ? Int(parts[1]) : nil
      headers = HTTPHeaders()
      return
    }
    guard !text.isEmpty, let colon = text.firstIndex(of: ":") else { return }
    let name = text[..<colon].trimmingWhitespace()
    let value = text[text.index(after: colon)...].trimmingWhitespace()
    headers.add(name: name, value: value)
  }

  /// Hands the final response's head to the sink once, at the first body byte or at the end.
  private func deliverHeadIfNeeded() -> BodyDisposition {
    if let disposition { return disposition }
    guard let status else {
      disposition = .abort
      return .abort
    }
    var urlPointer: UnsafePointer<CChar>?
    _ = ccurl_easy_getinfo_string(easy, Int32(CCURLINFO_EFFECTIVE_URL), &urlPointer)
    let finalURL = urlPointer.map { String(cString: $0) } ?? ""
    let head = ResponseHead(status: status, headers: headers, finalURL: finalURL)
    self.head = head
    let decided = sink.transferDidReceiveHead(head)
    disposition = decided
    return decided
  }

  /// Returns what the write callback returns: the bytes taken, 0 to abort, or the pause code.
  fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
    let now = Monotonic.now()
    lastActivity = now
    switch deliverHeadIfNeeded() {
    case .deliver:
      if let rateLimiter {
        let wait = rateLimiter.delay(now: now)
        if wait > 0 {
          // libcurl keeps this chunk and offers it again after `unpauseIfDue`.
          resumeAt = now + wait
          return Int(CCURL_WRITEFUNC_PAUSE)
        }
        rateLimiter.consume(bytes.count, now: now)
      }
      return sink.transferDidReceive(bytes) ? bytes.count : 0
    case .discard: return bytes.count
    case .abort: return 0
    }
  }

  /// Unpauses a rate-limited transfer whose wait is over; returns the wait left otherwise.
  func unpauseIfDue(now: UInt64) -> UInt64? {
    guard let resumeAt else { return nil }
    guard now >= resumeAt else { return resumeAt - now }
    self.resumeAt = nil
    lastActivity = now
    _ = ccurl_easy_pause(easy, Int32(CCURLPAUSE_CONT))
    return self.resumeAt.map { $0 > now ? $0 - now : 0 }
  }

  enum Ending {
    case curl(Int32)
    case cancelled
    case stalled
  }

  func finish(_ ending: Ending) {
    let code: Int32
    switch ending {
    case .cancelled:
      sink.transferDidFinish(
        head: head, failure: TransportFailure(kind: .cancelled, message: "cancelled", code: 42))
      return
    case .stalled:
      let seconds = Double(stallTimeout) / 1e9
      sink.transferDidFinish(
        head: head,
        failure: TransportFailure(
          kind: .timedOut,
          message: "no data for \(seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)) s",
          code: Int32(CCURLE_OPERATION_TIMEDOUT)))
      return
    case .curl(let result):
      code = result
    }
    if code == 0 {
      // A body-less response (416, 204, an empty file) reaches the sink here.
      let disposition = deliverHeadIfNeeded()
      if disposition == .abort {
        sink.transferDidFinish(
          head: head, failure: TransportFailure(kind: .aborted, message: "aborted", code: 23))
      } else {
        sink.transferDidFinish(head: head, failure: nil)
      }
      return
    }
    let detail = String(cString: errorBuffer)
    let message = detail.isEmpty ? String(cString: ccurl_easy_strerror(code)) : detail
    let kind: TransportFailure.Kind
    switch Int(code) {
    case Int(CCURLE_COULDNT_CONNECT), Int(CCURLE_COULDNT_RESOLVE_HOST), Int(CCURLE_COULDNT_RESOLVE_PROXY):
      kind = .connect
    case Int(CCURLE_PARTIAL_FILE), Int(CCURLE_RECV_ERROR), Int(CCURLE_SEND_ERROR), Int(CCURLE_GOT_NOTHING),
      Int(CCURLE_HTTP2), Int(CCURLE_HTTP2_STREAM):
      kind = .interrupted
    case Int(CCURLE_OPERATION_TIMEDOUT): kind = .timedOut
    case Int(CCURLE_SSL_CONNECT_ERROR), Int(CCURLE_PEER_FAILED_VERIFICATION), Int(CCURLE_SSL_CERTPROBLEM),
      Int(CCURLE_SSL_CACERT_BADFILE):
      kind = .tls
    case Int(CCURLE_TOO_MANY_REDIRECTS): kind = .tooManyRedirects
    case Int(CCURLE_URL_MALFORMAT), Int(CCURLE_UNSUPPORTED_PROTOCOL): kind = .badURL
    case Int(CCURLE_WEIRD_SERVER_REPLY), Int(CCURLE_BAD_CONTENT_ENCODING): kind = .malformedResponse
    case Int(CCURLE_WRITE_ERROR), Int(CCURLE_ABORTED_BY_CALLBACK): kind = .aborted
    default: kind = .other
    }
    sink.transferDidFinish(head: head, failure: TransportFailure(kind: kind, message: message, code: code))
  }
}

private func curlHeaderCallback(
  _ pointer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
  guard let pointer, let user else { return 0 }
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
  transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: pointer, count: size * count))
  return size * count
}

private func curlWriteCallback(
  _ pointer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?
) -> Int {
  guard let pointer, let user else { return 0 }
  let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
  // Returning less than the length makes libcurl stop the transfer with CURLE_WRITE_ERROR.
  return transfer.receiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count))
}
