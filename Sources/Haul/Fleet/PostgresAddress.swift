/// Where a fleet queue lives: a `postgresql://` URL as libpq understands it
/// (`postgresql://user:password@host:5432/dbname?sslmode=require`).
///
/// ```swift
/// let address = try PostgresAddress("postgresql://haul:secret@db.example/haul")
/// print(address)            // postgresql://haul@db.example/haul (never the password)
/// ```
///
/// The password is kept for connecting only: `description`, every error message and every
/// log line show `redacted`, which leaves it out.
public struct PostgresAddress: Sendable, Equatable, CustomStringConvertible {
  /// The URL exactly as given, handed to libpq.
  let connectionString: String
  /// The password (from the userinfo or a `password=` parameter), to scrub from libpq's messages.
  let password: String?
  /// The URL without any password.
  public let redacted: String

  /// The environment variable `haul` reads when `--queue` is not given.
  public static let environmentVariable = "HAUL_QUEUE"

  /// - Throws: `HaulError` (`.invalidInput`) unless `text` is a `postgresql://` or `postgres://` URL.
  public init(_ text: String) throws(HaulError) {
    guard let schemeEnd = text.firstRange(of: "://"),
      ["postgresql", "postgres"].contains(text[..<schemeEnd.lowerBound].lowercased())
    else {
      throw HaulError(
        .invalidInput, "the queue must be a postgresql:// URL",
        hint:
          "for example --queue postgresql://user@db.example:5432/haul (or set \(Self.environmentVariable))")
    }
    guard !text.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
      throw HaulError(.invalidInput, "the queue URL contains spaces or control characters")
    }
    let rest = text[schemeEnd.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    var head = String(text[..<schemeEnd.upperBound])
    var password: String?
    let authority = rest[..<authorityEnd]
    if let at = authority.lastIndex(of: "@") {
      let userinfo = authority[..<at]
      if let colon = userinfo.firstIndex(of: ":") {
        password = Self.percentDecoded(userinfo[userinfo.index(after: colon)...])
        head += userinfo[..<colon]
      } else {
        head += userinfo
      }
      head += authority[at...]
    } else {
      head += authority
    }
    var tail = String(rest[authorityEnd...])
    if let question = tail.firstIndex(of: "?") {
      let path = tail[..<question]
      var kept: [Substring] = []
      for pair in tail[tail.index(after: question)...].split(separator: "&") {
        if pair.lowercased().hasPrefix("password=") {
          password = Self.percentDecoded(pair.dropFirst("password=".count))
        } else {
          kept.append(pair)
        }
      }
      tail = String(path) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }
    self.connectionString = text
    self.password = password.flatMap { $0.isEmpty ? nil : $0 }
    self.redacted = head + tail
  }

  public var description: String { redacted }

  public static func == (lhs: PostgresAddress, rhs: PostgresAddress) -> Bool {
    lhs.connectionString == rhs.connectionString
  }

  /// `text` with the password replaced by `***` (libpq does not print passwords, but a server's
  /// message might echo the connection string; very short passwords are left alone, as replacing
  /// them would garble every message).
  func scrubbed(_ text: String) -> String {
    guard let password, password.count >= 4 else { return text }
    return text.replacing(password, with: "***")
  }

  private static func percentDecoded(_ text: Substring) -> String {
    var bytes: [UInt8] = []
    var utf8 = Array(text.utf8)[...]
    while let byte = utf8.popFirst() {
      if byte == UInt8(ascii: "%"), utf8.count >= 2,
        let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
      {
        bytes.append(value)
        utf8 = utf8.dropFirst(2)
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
