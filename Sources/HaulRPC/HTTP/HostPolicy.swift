#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Which `Host` headers the daemon answers: the defence against DNS rebinding, where a web page
/// makes its own domain name resolve to 127.0.0.1 and then talks to the daemon as "same origin".
/// Such a request carries the attacker's name in `Host`, so only names that cannot be rebound
/// are accepted: `localhost` and `*.localhost` (browsers resolve them to loopback themselves),
/// IP address literals (loopback ones only, unless the daemon listens on every address), and
/// names the user allowed explicitly.
package struct HostPolicy: Sendable, Equatable {
  package var listensOnAllAddresses: Bool
  /// Extra host names (lower case, without a trailing dot), e.g. the machine's own name.
  package var allowedNames: Set<String>

  package init(listensOnAllAddresses: Bool = false, allowedNames: Set<String> = []) {
    self.listensOnAllAddresses = listensOnAllAddresses
    self.allowedNames = Set(allowedNames.map { Self.normalized($0) })
  }

  package enum Verdict: Sendable, Equatable {
    case allowed
    /// No Host header (HTTP/1.1 requires one).
    case missing
    case refused(host: String)
  }

  package func verdict(forHostHeader header: String?) -> Verdict {
    guard let header else { return .missing }
    guard let host = Self.host(ofHeader: header) else { return .refused(host: header) }
    if let address = IPAddress(literal: host) {
      return listensOnAllAddresses || address.isLoopback ? .allowed : .refused(host: host)
    }
    let name = Self.normalized(host)
    if name == "localhost" || name.hasSuffix(".localhost") || allowedNames.contains(name) { return .allowed }
    return .refused(host: host)
  }

  /// The host part of a Host header: `name`, `name:port`, `[v6]` or `[v6]:port`; nil when malformed.
  package static func host(ofHeader header: String) -> String? {
    let value = header.trimmingASCIIWhitespace()
    guard !value.isEmpty else { return nil }
    if value.hasPrefix("[") {
      guard let close = value.firstIndex(of: "]") else { return nil }
      let rest = value[value.index(after: close)...]
      guard rest.isEmpty || (rest.first == ":" && isPort(rest.dropFirst())) else { return nil }
      return String(value[value.index(after: value.startIndex)..<close])
    }
    if let colon = value.lastIndex(of: ":") {
      guard isPort(value[value.index(after: colon)...]) else { return nil }
      let name = value[..<colon]
      return name.isEmpty || name.contains(":") ? nil : String(name)
    }
    return value
  }

  private static func isPort(_ digits: Substring) -> Bool {
    !digits.isEmpty && digits.count <= 5 && digits.allSatisfy { $0.isASCII && $0.isNumber }
  }

  private static func normalized(_ name: String) -> String {
    var lower = name.lowercased()
    if lower.hasSuffix(".") { lower.removeLast() }
    return lower
  }
}

/// An IPv4 or IPv6 address literal, parsed by inet_pton (no zone ids: a Host header has none).
package struct IPAddress: Sendable, Equatable {
  package let bytes: [UInt8]

  package init?(literal: String) {
    guard !literal.contains("%") else { return nil }
    var v4 = in_addr()
    if inet_pton(AF_INET, literal, &v4) == 1 {
      bytes = withUnsafeBytes(of: &v4) { Array($0) }
      return
    }
    var v6 = in6_addr()
    guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
    bytes = withUnsafeBytes(of: &v6) { Array($0) }
  }

  /// 127.0.0.0/8, ::1, and IPv4-mapped loopback (::ffff:127.x.y.z).
  package var isLoopback: Bool {
    if bytes.count == 4 { return bytes[0] == 127 }
    if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
    return bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
      && bytes[12] == 127
  }
}

extension StringProtocol {
  /// Without the spaces and tabs at both ends (HTTP's optional whitespace).
  package func trimmingASCIIWhitespace() -> String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) })
    else {
      return ""
    }
    return String(self[first...last])
  }
}
