import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A POSIX socket call failed.
public struct SocketError: Error, Sendable, CustomStringConvertible {
  public var operation: String
  public var code: Int32

  init(_ operation: String, code: Int32 = errno) {
    self.operation = operation
    self.code = code
  }

  public var description: String { "\(operation) failed: \(String(cString: strerror(code))) (\(code))" }
}

/// A port on 127.0.0.1 that was free a moment ago, for a server (nginx, PostgreSQL, sshd) that
/// must be told its port before it binds it. Another process may take it meanwhile, so a test that
/// needs a port where nothing listens uses port 1, which no test binds.
public func freeLoopbackPort() throws(SocketError) -> Int {
  let fd = try Sock.tcpSocket()
  defer { close(fd) }
  guard Sock.bindSocket(fd, Sock.loopbackAddress(port: 0)) == 0 else { throw SocketError("bind") }
  return try Sock.localPort(fd)
}

enum Sock {
  #if canImport(Glibc)
    static let stream = Int32(SOCK_STREAM.rawValue)
    static let sendFlags = Int32(MSG_NOSIGNAL)
  #else
    static let stream = SOCK_STREAM
    static let sendFlags: Int32 = 0
  #endif

  static let loopback = in_addr(s_addr: in_addr_t(0x7F00_0001).bigEndian)

  /// A TCP socket with SIGPIPE suppressed where the platform needs a socket option for that.
  static func tcpSocket() throws(SocketError) -> Int32 {
    let fd = socket(AF_INET, stream, 0)
    guard fd >= 0 else { throw SocketError("socket") }
    #if canImport(Darwin)
      setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
    #endif
    return fd
  }

  static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
    var value = value
    _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
  }

  static func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port)).bigEndian
    address.sin_addr = loopback
    return address
  }

  static func bindSocket(_ fd: Int32, _ address: sockaddr_in) -> Int32 {
    var address = address
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  static func connectSocket(_ fd: Int32, _ address: sockaddr_in) -> Int32 {
    var address = address
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  static func localPort(_ fd: Int32) throws(SocketError) -> Int {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard result == 0 else { throw SocketError("getsockname") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Writes all of `bytes`; false when the peer went away or the socket was shut down.
  static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
      guard let base = bytes.baseAddress else { return true }
      let written = send(fd, base + offset, bytes.count - offset, sendFlags)
      if written < 0 {
        if errno == EINTR { continue }
        return false
      }
      if written == 0 { return false }
      offset += written
    }
    return true
  }

  static func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
    bytes.withUnsafeBytes { sendAll(fd, $0) }
  }

  static func sendAll(_ fd: Int32, _ string: String) -> Bool {
    sendAll(fd, ArraySlice(Array(string.utf8)))
  }

  /// Reads up to `capacity` bytes and appends them; returns the count, 0 at EOF, -1 on error (errno set).
  static func receive(_ fd: Int32, into buffer: inout [UInt8], capacity: Int = 65536) -> Int {
    var chunk = [UInt8](repeating: 0, count: capacity)
    while true {
      let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, capacity, 0) }
      if count < 0 && errno == EINTR { continue }
      if count > 0 { buffer.append(contentsOf: chunk[0..<count]) }
      return count
    }
  }

  /// Waits up to `milliseconds` for `fd` to become readable (or hung up); true if it did.
  static func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let result = poll(&descriptor, 1, milliseconds)
    return result > 0
  }
}

/// Index of the first `\r\n\r\n` in `bytes` at or after `start`, pointing at the `\r`.
func findHeaderEnd(_ bytes: [UInt8], from start: Int = 0) -> Int? {
  var index = max(0, start)
  while index + 3 < bytes.count {
    if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
      return index
    }
    index += 1
  }
  return nil
}

/// Splits a header block (without the final blank line) into its first line and fields.
func parseHeaderBlock(_ bytes: ArraySlice<UInt8>) -> (firstLine: String, fields: HeaderFields) {
  let text = String(decoding: bytes, as: UTF8.self)
  var lines = text.components(separatedBy: "\r\n")
  let first = lines.isEmpty ? "" : lines.removeFirst()
  var fields = HeaderFields()
  for line in lines where !line.isEmpty {
    guard let colon = line.firstIndex(of: ":") else { continue }
    let name = String(line[..<colon])
    let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
    fields.entries.append((name: name, value: value))
  }
  return (first, fields)
}
