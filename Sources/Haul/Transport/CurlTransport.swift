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
    case resume(id: UInt64)
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

  fileprivate func resume(id: UInt64) {
    inbox.withLock { $0.commands.append(.resume(id: id)) }
    multi.wakeUp()
  }

  /// Runs on the event thread only: owns the multi handle's transfers.
  private final class CurlEventThread {
    private let multi: CurlMulti
    private var transfers: [UInt64: CurlTransfer] = [:]
    private var idsByEasy: [UnsafeMutableRawPointer: UInt64] = [:]
    private let cookieShares = CurlCookieShares()

    init(multi: CurlMulti) { self.multi = multi }

    func run(takeCommands: () -> [Command]) {
      while true {
        for command in takeCommands() {
          switch command {
          case .start(let id, let request, let sink): start(id: id, request, sink: sink)
          case .cancel(let id): finish(id: id, .cancelled)
          case .resume(let id): transfers[id]?.resumeReceiving()
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
          if let wait = transfer.readIfIdle(now: now) { timeout = min(timeout, wait) }
          // libcurl's low-speed check averages over seconds; a stall is judged from the last byte instead.
          if transfer.isStalled(now: now) { finish(id: id, .stalled) }
        }
        cookieShares.sweep(now: now)
        _ = ccurl_multi_poll(multi.pointer, Int32(min(timeout / 1_000_000 + 1, 10_000)), nil)
      }
    }

    private func start(id: UInt64, _ request: TransferRequest, sink: any TransferSink) {
      do {
        let transfer = try CurlTransfer(
          request: request, sink: sink, cookieShare: cookieShares.share(for: request.network))
        let code = ccurl_multi_add_handle(multi.pointer, transfer.easy)
        guard code == Int32(CCURLM_OK) else {
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
  func resumeReceiving() { transport.resume(id: id) }
}

/// One easy handle and its callbacks. Lives on the event thread only.
final class CurlTransfer {
  let easy: OpaquePointer
  private let sink: any TransferSink
  private var headerList: UnsafeMutablePointer<ccurl_slist>?
  private var resolveList: UnsafeMutablePointer<ccurl_slist>?
  /// For ftp://, ftps:// and sftp:// URLs: what the server said, to be told as an HTTP response head.
  private var ftp: FTPResponse?
  /// For sftp:// URLs: the range, the host key check and the head (see SFTPTransfer).
  private var sftp: SFTPTransfer?
  /// An SFTP range's last byte arrived: the transfer stopped there on purpose.
  private var reachedRangeEnd = false
  /// The largest file accepted (`NetworkOptions.maxFileSize`).
  private let maxFileSize: Int64?
  /// `-c FILE`: libcurl writes the jar when the handle is cleaned up, which may come after the
  /// process has exited; `finish` flushes it first.
  private let writesCookieJar: Bool
  /// The cookie store this transfer shares with the others of its cookie file and jar.
  private let cookieShare: CurlCookieShare?
  /// Why the transport itself stopped the transfer (a file too large, an FTP size never said).
  private var stoppedBy: TransportFailure?
  /// Where the body starts in the file, and the body bytes received (for a size not said in advance).
  private var bodyOffset: Int64 = 0
  private var bodyReceived: Int64 = 0
  /// libcurl writes failure details here; it must stay at one address for the handle's life.
  private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CCURL_ERROR_SIZE) + 1)

  // The response being received; a new status line (redirect hop, 1xx) starts over.
  private var status: Int?
  private var headers = HTTPHeaders()
  private var head: ResponseHead?
  private var disposition: BodyDisposition?

  private let rateLimiters: [RateLimiter]
  private let stallTimeout: UInt64
  /// When a byte (header or body) last arrived, or the transfer last left a rate-limit pause.
  private var lastActivity: UInt64
  /// When a transfer paused by the rate limiter may receive again (monotonic ns).
  private(set) var resumeAt: UInt64?
  /// Paused because the sink's buffers all wait for the disk; `resumeReceiving` ends it.
  private var pausedBySink = false

  init(request: TransferRequest, sink: any TransferSink, cookieShare: CurlCookieShare?)
    throws(TransportFailure)
  {
    guard let easy = ccurl_easy_init() else {
      throw TransportFailure(
        kind: .other, message: "libcurl could not create a handle", code: Int32(CCURLE_OUT_OF_MEMORY))
    }
    self.easy = easy
    self.sink = sink
    self.rateLimiters = request.rateLimiters
    self.maxFileSize = request.network.maxFileSize
    self.writesCookieJar = request.network.cookieJar != nil
    self.cookieShare = cookieShare
    cookieShare?.attach()
    self.stallTimeout = UInt64(max(0.001, request.stallTimeout) * 1e9)
    self.lastActivity = Monotonic.now()
    let ok = Int32(CCURLE_OK)
    var failed = ok
    func set(_ option: Int32, _ value: Int) {
      let code = ccurl_easy_setopt_long(easy, option, value)
      if code != ok { failed = code }
    }
    func set(_ option: Int32, _ value: String) {
      let code = value.withCString { ccurl_easy_setopt_pointer(easy, option, $0) }
      if code != ok { failed = code }
    }
    set(Int32(CCURLOPT_URL), request.url)
    set(Int32(CCURLOPT_NOSIGNAL), 1)
    set(Int32(CCURLOPT_FOLLOWLOCATION), 1)
    set(Int32(CCURLOPT_PROTOCOLS_STR), "http,https,ftp,ftps,sftp")
    set(Int32(CCURLOPT_REDIR_PROTOCOLS_STR), "http,https")
    let lowercasedURL = request.url.lowercased()
    let isSFTP = SFTPTransfer.handles(lowercasedURL: lowercasedURL)
    if lowercasedURL.hasPrefix("ftp://") || lowercasedURL.hasPrefix("ftps://") || isSFTP {
      // The engine's Range becomes REST (and a stop) on the data connection, or an SFTP seek;
      // the other headers are HTTP's.
      let rangeValue = request.headers.first { $0.name.caseInsensitiveEquals("Range") }?.value
      let range = rangeValue.flatMap(FTPResponse.Range.init(httpRange:))
      if rangeValue != nil, range == nil { failed = Int32(CCURLE_URL_MALFORMAT) }
      ftp = FTPResponse(range: range)
      bodyOffset = range?.first ?? 0
      set(Int32(CCURLOPT_FILETIME), 1)
      if isSFTP {
        sftp = SFTPTransfer(request: request, range: range)
      } else if let range {
        set(Int32(CCURLOPT_RANGE), range.curlRange)
      }
    } else {
      set(Int32(CCURLOPT_HTTPGET), 1)
    }
    set(Int32(CCURLOPT_USERAGENT), request.userAgent)
    set(Int32(CCURLOPT_TCP_KEEPALIVE), 1)
    set(Int32(CCURLOPT_BUFFERSIZE), request.receiveBufferSize)
    set(Int32(CCURLOPT_CONNECTTIMEOUT), max(1, Int(request.stallTimeout.rounded(.up))))
    set(Int32(CCURLOPT_SSL_VERIFYPEER), request.verifyTLS ? 1 : 0)
    set(Int32(CCURLOPT_SSL_VERIFYHOST), request.verifyTLS ? 2 : 0)
    var options = CurlOptionSetter(easy: easy)
    options.apply(request.tls)
    options.apply(request.network, ifModifiedSince: request.ifModifiedSince, cookies: cookieShare)
    sftp?.configure(&options, tls: request.tls)
    resolveList = options.resolveList
    if options.failed != ok { failed = options.failed }
    for (name, value) in request.headers where ftp == nil {
      if bodyOffset == 0, name.caseInsensitiveEquals("Range") { bodyOffset = Self.rangeStart(value) ?? 0 }
      guard let list = ccurl_slist_append(headerList, "\(name): \(value)") else {
        failed = Int32(CCURLE_OUT_OF_MEMORY)
        break
      }
      headerList = list
    }
    if let headerList {
      let code = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_HTTPHEADER), headerList)
      if code != ok { failed = code }
    }
    errorBuffer.initialize(repeating: 0, count: Int(CCURL_ERROR_SIZE) + 1)
    _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_ERRORBUFFER), errorBuffer)
    // Unretained: the event thread keeps this object alive until the handle is cleaned up.
    let me = Unmanaged.passUnretained(self).toOpaque()
    _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_HEADERDATA), me)
    _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_WRITEDATA), me)
    _ = ccurl_easy_setopt_callback(easy, Int32(CCURLOPT_HEADERFUNCTION), curlHeaderCallback)
    _ = ccurl_easy_setopt_callback(easy, Int32(CCURLOPT_WRITEFUNCTION), curlWriteCallback)
    if failed != ok {
      let message = String(cString: ccurl_easy_strerror(failed))
      // deinit releases the handle, list and buffer: every stored property is set by now.
      let kind: TransportFailure.Kind = failed == Int32(CCURLE_URL_MALFORMAT) ? .badURL : .other
      throw TransportFailure(kind: kind, message: message, code: failed)
    }
  }

  deinit {
    ccurl_easy_cleanup(easy)
    cookieShare?.detach()
    ccurl_slist_free_all(headerList)
    ccurl_slist_free_all(resolveList)
    errorBuffer.deallocate()
  }

  /// The first byte of `bytes=FIRST-…`, where a body of a size not said in advance starts.
  private static func rangeStart(_ value: String) -> Int64? {
    guard value.hasPrefix("bytes="), let dash = value.firstIndex(of: "-") else { return nil }
    return Int64(value[value.index(value.startIndex, offsetBy: 6)..<dash])
  }

  /// No byte for the stall timeout, while neither the rate limit nor the sink (the disk) holds
  /// the transfer back.
  func isStalled(now: UInt64) -> Bool {
    resumeAt == nil && !pausedBySink && now > lastActivity && now - lastActivity > stallTimeout
  }

  fileprivate func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
    lastActivity = Monotonic.now()
    var end = line.count
    while end > 0, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[0..<end]), as: UTF8.self)
    if ftp != nil {
      // The server's replies on the control connection, not HTTP header lines.
      ftp?.receive(line: text)
      return
    }
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
  /// `ftpStatus`: the status an FTP failure stands for (404 for a missing file), if any.
  private func deliverHeadIfNeeded(ftpStatus: Int? = nil) -> BodyDisposition {
    if let disposition { return disposition }
    var urlPointer: UnsafePointer<CChar>?
    _ = ccurl_easy_getinfo_string(easy, Int32(CCURLINFO_EFFECTIVE_URL), &urlPointer)
    let finalURL = urlPointer.map { String(cString: $0) } ?? ""
    let head: ResponseHead
    if let ftp {
      var modified: Int64 = -1
      _ = ccurl_easy_getinfo_off(easy, Int32(CCURLINFO_FILETIME_T), &modified)
      var unmet = 0
      _ = ccurl_easy_getinfo_long(easy, Int32(CCURLINFO_CONDITION_UNMET), &unmet)
      if let ftpStatus, ftpStatus != 416 {
        head = ResponseHead(status: ftpStatus, headers: HTTPHeaders(), finalURL: finalURL)
      } else if let sftp {
        head = sftp.head(easy: easy, pastTheEnd: ftpStatus == 416, finalURL: finalURL)
      } else if let told = ftp.head(
        modified: modified >= 0 ? modified : nil, unchanged: unmet != 0, finalURL: finalURL)
      {
        head = told
      } else {
        stoppedBy = TransportFailure(
          kind: .malformedResponse,
          message: "the FTP server did not say the file's size, so a part cannot be placed",
          code: Int32(CCURLE_WEIRD_SERVER_REPLY))
        disposition = .abort
        return .abort
      }
    } else {
      guard let status else {
        disposition = .abort
        return .abort
      }
      // A server that ignores If-Modified-Since sends 200; libcurl then checks Last-Modified
      // itself, skips the body, and says the condition failed: that is a 304 too.
      var unmet = 0
      _ = ccurl_easy_getinfo_long(easy, Int32(CCURLINFO_CONDITION_UNMET), &unmet)
      head = ResponseHead(status: unmet != 0 ? 304 : status, headers: headers, finalURL: finalURL)
    }
    if let failure = sizeLimitFailure(head) {
      stoppedBy = failure
      disposition = .abort
      return .abort
    }
    self.head = head
    let decided = sink.transferDidReceiveHead(head)
    disposition = decided
    return decided
  }

  /// The failure for a file larger than `maxFileSize`, as its head tells the size.
  private func sizeLimitFailure(_ head: ResponseHead) -> TransportFailure? {
    guard let maxFileSize, head.status == 200 || head.status == 206 else { return nil }
    let total: Int64?
    if head.status == 206, let range = head.headers["Content-Range"], let slash = range.lastIndex(of: "/") {
      total = Int64(range[range.index(after: slash)...])
    } else {
      total = head.status == 200 ? head.headers["Content-Length"].flatMap { Int64($0) } : nil
    }
    guard let total, total > maxFileSize else { return nil }
    return Self.tooLargeFailure(size: total, limit: maxFileSize)
  }

  private static func tooLargeFailure(size: Int64?, limit: Int64) -> TransportFailure {
    let what = size.map { "the file is \(ByteQuantity.format($0)), more than" } ?? "the file is larger than"
    return TransportFailure(
      kind: .aborted,
      message: "\(what) the largest file size accepted (\(ByteQuantity.format(limit)))",
      code: Int32(CCURLE_FILESIZE_EXCEEDED))
  }

  /// Returns what the write callback returns: the bytes taken, 0 to abort, or the pause code.
  fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
    let now = Monotonic.now()
    lastActivity = now
    switch deliverHeadIfNeeded() {
    case .deliver:
      // An SFTP range was asked to the file's end (see SFTPTransfer): only its own bytes are taken.
      let limit = sftp?.bodyLimit.map { Int(min(Int64(bytes.count), $0 - bodyReceived)) }
      let offered = bytes.count
      let bytes = limit.map { UnsafeRawBufferPointer(rebasing: bytes[0..<$0]) } ?? bytes
      if let maxFileSize, bodyOffset + bodyReceived + Int64(bytes.count) > maxFileSize {
        // A size not said in advance: stop at the first byte past the limit.
        stoppedBy = Self.tooLargeFailure(size: nil, limit: maxFileSize)
        return 0
      }
      if let (wait, limiter) = RateLimiter.longestDelay(rateLimiters, now: now) {
        // libcurl keeps this chunk and offers it again after `unpauseIfDue`; when, within the
        // limit's burst, is drawn so that the transfers it holds back take turns.
        resumeAt = now + wait + UInt64.random(in: 0...limiter.burstNanoseconds)
        return Int(CCURL_WRITEFUNC_PAUSE)
      }
      switch sink.transferDidReceive(bytes) {
      case .accepted:
        bodyReceived += Int64(bytes.count)
        for limiter in rateLimiters { limiter.consume(bytes.count, now: now) }
        if let bodyLimit = sftp?.bodyLimit, bodyReceived >= bodyLimit {
          // Taking fewer than offered stops libcurl, with a write error `finish` knows to be the range's end.
          reachedRangeEnd = true
          return 0
        }
        return offered
      case .pause:
        // libcurl keeps this chunk and offers it again after `resumeReceiving`.
        pausedBySink = true
        return Int(CCURL_WRITEFUNC_PAUSE)
      case .abort:
        return 0
      }
    case .discard: return bytes.count
    case .abort: return 0
    }
  }

  /// The sink has room again: unpause (libcurl offers the kept chunk again at once, from
  /// inside `curl_easy_pause`, which may pause it again).
  func resumeReceiving() {
    guard pausedBySink else { return }
    pausedBySink = false
    lastActivity = Monotonic.now()
    guard resumeAt == nil else { return }  // the rate limit's own unpause offers it again
    _ = ccurl_easy_pause(easy, Int32(CCURLPAUSE_CONT))
  }

  /// An SFTP transfer that received nothing for this long is made to read once.
  static let sftpIdleRead: UInt64 = 100_000_000

  /// libssh2 reads ahead: bytes it already took from the socket (the file's rest, the answer to
  /// closing it) are not seen by libcurl, which waits for the socket to become readable. After
  /// a pause (the rate limit, a full disk queue) they could wait there, the server having
  /// nothing more to send, until the stall timeout: 33 s instead of 3 for the SFTP tests' 4 MiB
  /// at `--limit-rate 4M -x 4`. Pausing and unpausing makes libcurl read once. Not activity:
  /// a silent server still stalls. Returns how long until the next look, for SFTP transfers.
  func readIfIdle(now: UInt64) -> UInt64? {
    guard sftp != nil, resumeAt == nil, !pausedBySink else { return nil }
    guard now > lastActivity, now - lastActivity >= Self.sftpIdleRead else { return Self.sftpIdleRead }
    _ = ccurl_easy_pause(easy, Int32(CCURLPAUSE_RECV))
    _ = ccurl_easy_pause(easy, Int32(CCURLPAUSE_CONT))
    return Self.sftpIdleRead
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
    if writesCookieJar {
      // Written before the end is reported, and not again by curl_easy_cleanup: libcurl empties
      // the jar before it renames the new copy over it, and a cleanup as the process exits
      // left it empty (1 run in about 30 of the cookie test under load).
      _ = "FLUSH".withCString { ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_COOKIELIST), $0) }
      _ = ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_COOKIEJAR), nil)
      cookieShare?.jarWritten()
    }
    let code: Int32
    switch ending {
    case .cancelled:
      sink.transferDidFinish(
        head: head,
        failure: TransportFailure(
          kind: .cancelled, message: "cancelled", code: Int32(CCURLE_ABORTED_BY_CALLBACK)))
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
      code = reachedRangeEnd && result == Int32(CCURLE_WRITE_ERROR) ? Int32(CCURLE_OK) : result
    }
    if let stoppedBy {
      // The transport stopped it, before the sink saw a head of a file it would refuse.
      sink.transferDidFinish(head: head, failure: stoppedBy)
      return
    }
    let ftpStatus = ftp != nil && disposition == nil ? FTPResponse.status(forCurlCode: code) : nil
    if code == Int32(CCURLE_OK) || ftpStatus != nil {
      // A body-less response (416, 204, an empty file, FTP's missing file) reaches the sink here.
      let disposition = deliverHeadIfNeeded(ftpStatus: ftpStatus)
      if let stoppedBy {
        sink.transferDidFinish(head: nil, failure: stoppedBy)
        return
      }
      if disposition == .abort {
        sink.transferDidFinish(head: head, failure: .refusedBySink)
      } else {
        sink.transferDidFinish(head: head, failure: nil)
      }
      return
    }
    if let problem = sftp?.hostKeyProblem {
      sink.transferDidFinish(
        head: head, failure: TransportFailure(kind: .hostKey, message: problem, code: code))
      return
    }
    if code == Int32(CCURLE_UNSUPPORTED_PROTOCOL), let target = refusedRedirectTarget() {
      let message =
        "the server redirected to \(target), which haul does not follow "
        + "(a redirect may lead only to http:// or https://)"
      sink.transferDidFinish(
        head: head, failure: TransportFailure(kind: .redirectRefused, message: message, code: code))
      return
    }
    sink.transferDidFinish(
      head: head, failure: TransportFailure(curlCode: code, detail: String(cString: errorBuffer)))
  }

  /// After libcurl refused to follow a redirect (a scheme outside REDIR_PROTOCOLS), where it
  /// led (`file://…`); nil when no redirect was followed (the URL given has the scheme).
  /// Only the scheme is told: the server's URL may carry a password or control characters.
  private func refusedRedirectTarget() -> String? {
    var redirects = 0
    _ = ccurl_easy_getinfo_long(easy, Int32(CCURLINFO_REDIRECT_COUNT), &redirects)
    guard redirects > 0 else { return nil }
    var pointer: UnsafePointer<CChar>?
    _ = ccurl_easy_getinfo_string(easy, Int32(CCURLINFO_EFFECTIVE_URL), &pointer)
    let url = pointer.map { String(cString: $0) } ?? ""
    let scheme = url.prefix { $0 != ":" }.prefix(16)
    guard !scheme.isEmpty,
      scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
    else { return "a URL of another scheme" }
    return "\(scheme.lowercased())://…"
  }
}

extension TransportFailure {
  /// A transfer whose sink refused its response (`BodyDisposition.abort`), as libcurl reports a
  /// write callback that takes nothing.
  static let refusedBySink = TransportFailure(
    kind: .aborted, message: "aborted", code: Int32(CCURLE_WRITE_ERROR))
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
