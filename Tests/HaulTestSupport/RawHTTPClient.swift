import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A response as read off the wire by `RawHTTPConnection` / `rawHTTPGet`.
public struct RawResponse: Sendable, CustomStringConvertible {
  public var status: Int
  public var reason: String
  public var headers: HeaderFields
  /// The payload received (de-chunked when `Transfer-Encoding: chunked`), possibly incomplete.
  public var body: [UInt8]
  /// The message body bytes exactly as received (chunk framing included).
  public var rawBody: [UInt8]
  /// Sizes of the chunks received (chunked responses only; the terminating 0-chunk is not listed).
  public var chunkSizes: [Int]
  /// The connection ended (EOF, reset or read timeout) before the message was complete: fewer bytes than
  /// `Content-Length`, or a chunked body without its terminating 0-chunk.
  public var closedEarly: Bool
  /// Reading stopped because no bytes arrived within the timeout.
  public var timedOut: Bool

  public func header(_ name: String) -> String? { headers[name] }
  public var isChunked: Bool { headers["Transfer-Encoding"]?.lowercased().contains("chunked") ?? false }

  public var description: String {
    "\(status) \(reason), \(body.count) body bytes\(closedEarly ? " (closed early)" : "")"
      + "\(timedOut ? " (timed out)" : "")\n\(headers)"
  }
}

public enum RawHTTPError: Error, Sendable, CustomStringConvertible {
  case connectFailed(SocketError)
  case sendFailed(SocketError)
  /// The connection ended (or timed out) before a complete status line and header block arrived.
  case noResponse(received: [UInt8], timedOut: Bool)
  case malformedStatusLine(String)

  public var description: String {
    switch self {
    case .connectFailed(let error): "connect: \(error)"
    case .sendFailed(let error): "send: \(error)"
    case .noResponse(let received, let timedOut):
      "no complete response head (\(received.count) bytes received\(timedOut ? ", timed out" : ""))"
    case .malformedStatusLine(let line): "malformed status line: \(line)"
    }
  }
}

/// One GET (or `method`) on a fresh connection to `127.0.0.1:port`, sending `Host` and `Connection: close`
/// unless `headers` provide them.
public func rawHTTPGet(
  port: Int, path: String, headers: [(String, String)] = [], timeout: Double = 5
) throws -> RawResponse {
  try rawHTTPRequest(method: "GET", port: port, path: path, headers: headers, timeout: timeout)
}

public func rawHTTPRequest(
  method: String, port: Int, path: String, headers: [(String, String)] = [], timeout: Double = 5
) throws -> RawResponse {
  let connection = try RawHTTPConnection(port: port, timeout: timeout)
  defer { connection.close() }
  var headers = headers
  if !headers.contains(where: { $0.0.lowercased() == "connection" }) {
    headers.append(("Connection", "close"))
  }
  return try connection.request(method: method, path: path, headers: headers)
}

/// A blocking client connection for driving `TestServer` by hand (keep-alive, partial reads, stalls).
/// Not thread-safe: use it from one thread at a time.
public final class RawHTTPConnection {
  public let port: Int
  private var fd: Int32
  private var buffer: [UInt8] = []
  private var sawEOF = false

  /// Connects to `127.0.0.1:port`; each read gives up after `timeout` seconds without data.
  public init(port: Int, timeout: Double = 5) throws {
    self.port = port
    let fd: Int32
    do {
      fd = try Sock.tcpSocket()
    } catch {
      throw RawHTTPError.connectFailed(error)
    }
    var interval = timeval(
      tv_sec: Int(timeout), tv_usec: Int32((timeout - Double(Int(timeout))) * 1_000_000).asSuseconds)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
    guard Sock.connectSocket(fd, Sock.loopbackAddress(port: port)) == 0 else {
      let error = SocketError("connect")
      closeDescriptor(fd)
      throw RawHTTPError.connectFailed(error)
    }
    Sock.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    self.fd = fd
  }

  deinit { close() }

  public var isOpen: Bool { fd >= 0 }

  /// Sends a request head: `METHOD path HTTP/1.1`, then `Host` (unless given) and `headers`.
  public func send(method: String = "GET", path: String, headers: [(String, String)] = []) throws {
    var head = "\(method) \(path) HTTP/1.1\r\n"
    if !headers.contains(where: { $0.0.lowercased() == "host" }) { head += "Host: 127.0.0.1:\(port)\r\n" }
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    head += "\r\n"
    try sendRaw(Array(head.utf8))
  }

  /// Sends bytes as they are.
  public func sendRaw(_ bytes: [UInt8]) throws {
    guard fd >= 0, Sock.sendAll(fd, bytes[...]) else { throw RawHTTPError.sendFailed(SocketError("send")) }
  }

  /// Sends a request and reads its response.
  public func request(method: String = "GET", path: String, headers: [(String, String)] = []) throws
    -> RawResponse
  {
    try send(method: method, path: path, headers: headers)
    return try readResponse(method: method)
  }

  /// Reads one response; `method` tells whether a body follows (not for HEAD).
  public func readResponse(method: String = "GET") throws -> RawResponse {
    var timedOut = false
    var headEnd = findHeaderEnd(buffer)
    while headEnd == nil {
      let searchFrom = max(0, buffer.count - 3)
      switch fill() {
      case .data: headEnd = findHeaderEnd(buffer, from: searchFrom)
      case .timeout: timedOut = true
      case .closed: break
      }
      if timedOut || (headEnd == nil && sawEOF) {
        throw RawHTTPError.noResponse(received: buffer, timedOut: timedOut)
      }
    }
    guard let end = headEnd else { throw RawHTTPError.noResponse(received: buffer, timedOut: false) }
    let (statusLine, headers) = parseHeaderBlock(buffer[0..<end])
    buffer.removeFirst(end + 4)
    let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
      throw RawHTTPError.malformedStatusLine(statusLine)
    }
    var response = RawResponse(
      status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: headers, body: [],
      rawBody: [],
      chunkSizes: [], closedEarly: false, timedOut: false)
    if method == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304 {
      return response
    }
    if response.isChunked {
      readChunked(into: &response)
    } else if let lengthText = headers["Content-Length"], let length = Int(lengthText) {
      while buffer.count < length {
        let result = fill()
        if result == .data { continue }
        response.timedOut = result == .timeout
        response.closedEarly = true
        break
      }
      let count = min(length, buffer.count)
      response.body = Array(buffer[0..<count])
      response.rawBody = response.body
      buffer.removeFirst(count)
    } else {
      // Delimited by the end of the connection.
      while true {
        let result = fill()
        if result == .data { continue }
        response.timedOut = result == .timeout
        break
      }
      response.body = buffer
      response.rawBody = buffer
      buffer.removeAll()
    }
    return response
  }

  /// Reads until at least `count` more bytes are buffered or the connection ends; returns what was read
  /// (for inspecting a response piecemeal).
  public func readBytes(atLeast count: Int) -> [UInt8] {
    while buffer.count < count, fill() == .data {}
    let bytes = buffer
    buffer.removeAll()
    return bytes
  }

  /// Waits until the server closes the connection (true) or `timeout` passes (false). Data arriving
  /// meanwhile is buffered for later reads.
  public func waitForClose(timeout: Double) -> Bool {
    if sawEOF { return true }
    guard fd >= 0 else { return true }
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if Sock.waitReadable(fd, milliseconds: 10), fill() == .closed { return true }
    }
    return false
  }

  public func close() {
    if fd >= 0 {
      closeDescriptor(fd)
      fd = -1
    }
  }

  // MARK: Private

  private enum FillResult { case data, timeout, closed }

  private func fill() -> FillResult {
    guard fd >= 0, !sawEOF else { return .closed }
    errno = 0
    let count = Sock.receive(fd, into: &buffer)
    if count > 0 { return .data }
    if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .timeout }
    sawEOF = true
    return .closed
  }

  private func readChunked(into response: inout RawResponse) {
    var cursor = 0  // parse position in `buffer`
    func ensure(_ count: Int) -> Bool {
      while buffer.count < cursor + count {
        let result = fill()
        if result != .data {
          response.timedOut = result == .timeout
          return false
        }
      }
      return true
    }
    func line() -> String? {
      while true {
        if let index = buffer[cursor...].firstIndex(of: 10), index > cursor, buffer[index - 1] == 13 {
          let text = String(decoding: buffer[cursor..<(index - 1)], as: UTF8.self)
          cursor = index + 1
          return text
        }
        let result = fill()
        if result != .data {
          response.timedOut = result == .timeout
          return nil
        }
      }
    }
    defer {
      response.rawBody = Array(buffer[0..<min(cursor, buffer.count)])
      buffer.removeFirst(min(cursor, buffer.count))
    }
    while true {
      guard let sizeLine = line() else {
        response.closedEarly = true
        return
      }
      let sizeText = sizeLine.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
      guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
        response.closedEarly = true
        return
      }
      if size == 0 {
        // Trailer section up to an empty line.
        while true {
          guard let trailer = line() else {
            response.closedEarly = true
            return
          }
          if trailer.isEmpty { return }
        }
      }
      response.chunkSizes.append(size)
      if !ensure(size + 2) {
        let available = max(0, min(size, buffer.count - cursor))
        response.body += buffer[cursor..<(cursor + available)]
        cursor += available
        response.closedEarly = true
        return
      }
      response.body += buffer[cursor..<(cursor + size)]
      cursor += size + 2
    }
  }
}

private func closeDescriptor(_ fd: Int32) { _ = close(fd) }

extension Int32 {
  fileprivate var asSuseconds: suseconds_t { suseconds_t(self) }
}
