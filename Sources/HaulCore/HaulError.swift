/// The one error type Haul throws.
///
/// `category` is stable and maps to the `haul` command's exit codes; `message`
/// says what happened in words a user understands; `hint` (when present) says
/// what to do next; `underlying` keeps the cause for logs.
///
/// `Download.run()` throws only this type, so `error` is a `HaulError` in its `catch` (inside a
/// closure, say so: `do throws(HaulError) { … }`):
///
/// ```swift
/// do {
///   try await download.run()
/// } catch where error.category == .network {
///   print("offline? \(error.message)")
/// } catch {
///   print(error.message, error.hint ?? "")
/// }
/// ```
public struct HaulError: Error, Sendable, CustomStringConvertible, Equatable {
  /// Stable classes of failure. Compare with the static members; new ones may be added.
  public struct Category: Hashable, Sendable, CustomStringConvertible {
    private let code: Int32

    private init(_ code: Int32) { self.code = code }

    /// Anything not covered below.
    public static let generic = Category(1)
    /// The request itself is invalid: a bad URL, option or argument.
    public static let invalidInput = Category(2)
    /// Reading or writing local files failed: disk full, permission denied, file exists.
    public static let fileSystem = Category(3)
    /// The network failed: no route, refused, reset, timed out, a failed TLS handshake, gave up
    /// retrying.
    public static let network = Category(4)
    /// The server's TLS certificate could not be verified.
    public static let tls = Category(5)
    /// The server wants credentials (401, 407) or refused them.
    public static let authentication = Category(6)
    /// The server's responses are inconsistent (wrong Content-Range, bad framing).
    public static let `protocol` = Category(7)
    /// The server answered with an error status (4xx/5xx).
    public static let server = Category(8)
    /// A checksum or HTTP digest did not match.
    public static let integrity = Category(9)
    /// Stopped on request (cancel, Ctrl-C); progress is saved unless discarded.
    public static let interrupted = Category(130)

    /// The `haul` command's exit status for this category (wget's numbering plus 9 and 130).
    public var exitCode: Int32 { code }

    public var description: String {
      switch self {
      case .invalidInput: "invalid input"
      case .fileSystem: "file error"
      case .network: "network error"
      case .tls: "TLS error"
      case .authentication: "authentication error"
      case .protocol: "protocol error"
      case .server: "server error"
      case .integrity: "integrity error"
      case .interrupted: "interrupted"
      default: "error"
      }
    }
  }

  public let category: Category
  /// What happened, for a person.
  public let message: String
  /// What to do next, when there is something useful to say.
  public let hint: String?
  /// The lower-level cause (an errno, a libcurl code, a decoding error), if any.
  public let underlying: (any Error & Sendable)?

  public init(
    _ category: Category, _ message: String, hint: String? = nil,
    underlying: (any Error & Sendable)? = nil
  ) {
    self.category = category
    self.message = message
    self.hint = hint
    self.underlying = underlying
  }

  public var description: String { message }

  /// Same category, message and hint (the underlying cause is not compared).
  public static func == (lhs: HaulError, rhs: HaulError) -> Bool {
    lhs.category == rhs.category && lhs.message == rhs.message && lhs.hint == rhs.hint
  }
}

/// A failed POSIX call, kept as the underlying cause of a `HaulError`.
public struct SystemError: Error, Sendable, CustomStringConvertible, Equatable {
  public let call: String
  public let errno: Int32

  public init(_ call: String, errno: Int32) {
    self.call = call
    self.errno = errno
  }

  public var description: String { "\(call): \(String(cString: strerror(errno)))" }

  /// Whether `errno` says the disk, or the user's quota on it, has no room left.
  package static func meansNoSpace(_ errno: Int32) -> Bool { errno == ENOSPC || errno == EDQUOT }
}

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
