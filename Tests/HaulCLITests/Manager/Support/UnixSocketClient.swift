import Foundation
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A test's own client of a catalog's control socket: raw lines in, lines out (independent of
/// the command's client, so the protocol is checked from outside).
final class UnixSocketClient {
  private let descriptor: Int32
  private var buffer: [UInt8] = []

  struct Failure: Error, CustomStringConvertible { let description: String }

  init(path: String) throws {
    // Connected before it is stored: once every property is set, a throwing init runs deinit,
    // and a close there as well as here would close a number another thread may have reused.
    descriptor = try Self.connectedSocket(path)
    var timeout = timeval(tv_sec: 60, tv_usec: 0)
    _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  /// A socket connected to `path`, closed again when that fails.
  private static func connectedSocket(_ path: String) throws -> Int32 {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
    guard let connected = UnixSocketAddress.with(path: path, { connect(descriptor, $0, $1) }) else {
      close(descriptor)
      throw Failure(description: "path too long for a socket address: \(path)")
    }
    guard connected == 0 else {
      let code = errno
      close(descriptor)
      throw Failure(description: "connect \(path): errno \(code)")
    }
    return descriptor
  }

  deinit { close(descriptor) }

  /// Sends `line` and a newline, and returns the next line received.
  func exchange(_ line: String) throws -> String {
    let bytes = Array((line + "\n").utf8)
    let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == bytes.count else { throw Failure(description: "send: errno \(errno)") }
    while true {
      if let newline = buffer.firstIndex(of: 0x0A) {
        let answer = String(decoding: buffer[..<newline], as: UTF8.self)
        buffer.removeSubrange(...newline)
        return answer
      }
      var chunk = [UInt8](repeating: 0, count: 65536)
      let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { throw Failure(description: "the connection ended (errno \(errno))") }
      buffer += chunk[..<count]
    }
  }

  /// `exchange`, the answer decoded.
  func call(_ line: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(try exchange(line).utf8))
  }
}
