import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The sockets the daemon listens on: 127.0.0.1 and ::1 by default, 0.0.0.0 and :: (IPv6
/// only, so both can share the port) with `--rpc-listen-all`. Port 0 picks a free port for
/// the first and reuses it for the second (tests).
struct ListeningSockets: Sendable {
  struct Socket: Sendable {
    let fd: Int32
    let address: String
  }

  let sockets: [Socket]
  let port: UInt16
  /// Addresses that could not be bound because the system lacks them (no IPv6 at all).
  let unavailable: [String]

  static func make(port requested: UInt16, all: Bool) throws(HaulError) -> ListeningSockets {
    let addresses = all ? ["0.0.0.0", "::"] : ["127.0.0.1", "::1"]
    var sockets: [Socket] = []
    var unavailable: [String] = []
    var port = requested
    do throws(HaulError) {
      for address in addresses {
        switch try bindOne(address, port: port) {
        case .bound(let fd, let actual):
          sockets.append(Socket(fd: fd, address: address))
          port = actual
        case .unavailable:
          unavailable.append(address)
        }
      }
    } catch {
      for socket in sockets { close(socket.fd) }
      throw error
    }
    guard !sockets.isEmpty else {
      throw HaulError(.generic, "none of \(addresses.joined(separator: ", ")) can be listened on")
    }
    return ListeningSockets(sockets: sockets, port: port, unavailable: unavailable)
  }

  private enum Outcome {
    case bound(Int32, port: UInt16)
    case unavailable
  }

  private static func bindOne(_ address: String, port: UInt16) throws(HaulError) -> Outcome {
    let v6 = address.contains(":")
    let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else {
      if v6 && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT) { return .unavailable }
      throw .system("cannot create a socket for \(address)", call: "socket")
    }
    var one: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    if v6 { _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)

    let bound: Int32
    if v6 {
      var address6 = sockaddr_in6()
      address6.sin6_family = sa_family_t(AF_INET6)
      address6.sin6_port = port.bigEndian
      _ = inet_pton(AF_INET6, address, &address6.sin6_addr)
      bound = bindAddress(fd, address6)
    } else {
      var address4 = sockaddr_in()
      address4.sin_family = sa_family_t(AF_INET)
      address4.sin_port = port.bigEndian
      _ = inet_pton(AF_INET, address, &address4.sin_addr)
      bound = bindAddress(fd, address4)
    }
    guard bound == 0 else {
      let code = errno
      close(fd)
      // ::1 on a machine without IPv6 configured: listen on IPv4 only.
      if v6 && (code == EADDRNOTAVAIL || code == EAFNOSUPPORT) { return .unavailable }
      let hint =
        code == EADDRINUSE ? " (is another daemon, or aria2c, running? --rpc-listen-port picks another)" : ""
      throw .system(
        "cannot listen on \(v6 ? "[\(address)]" : address):\(port)\(hint)", call: "bind", errno: code)
    }
    guard listen(fd, 511) == 0 else {
      let code = errno
      close(fd)
      throw .system("cannot listen on \(address)", call: "listen", errno: code)
    }
    var actual = sockaddr_storage()
    var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
    }
    let actualPort = withUnsafeBytes(of: &actual) { raw -> UInt16 in
      v6
        ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
        : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
    }
    return .bound(fd, port: actualPort)
  }

  /// bind(2) with a sockaddr_in or sockaddr_in6.
  private static func bindAddress<Address>(_ fd: Int32, _ address: Address) -> Int32 {
    var address = address
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<Address>.size))
      }
    }
  }
}
