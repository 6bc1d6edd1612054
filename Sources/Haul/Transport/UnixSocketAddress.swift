#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The address of a Unix-domain socket at a file-system path, for `bind` and `connect`: the
/// SSH agent's socket (SFTP), the manager's control socket, and the tests' sockets.
///
///     let connected = UnixSocketAddress.with(path: path) { connect(descriptor, $0, $1) }
package enum UnixSocketAddress {
  /// Calls `body` with a `sockaddr_un` holding `path` and the address's length (the whole
  /// `sockaddr_un`), and returns what it returns; nil, without calling `body`, when `path` and
  /// its terminating NUL do not fit in `sun_path`. Such a path is refused rather than cut short:
  /// a shorter path names another file.
  package static func with<Value, Failure: Error>(
    path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Value
  ) throws(Failure) -> Value? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
      buffer.copyBytes(from: bytes)
      buffer[bytes.count] = 0
    }
    return try withUnsafePointer(to: &address) { pointer throws(Failure) in
      try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress throws(Failure) in
        try body(socketAddress, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
  }
}
