import Dispatch
import FoundationEssentials

/// One HTTP GET as the engine wants it; the transport adds nothing of its own beyond redirects.
struct TransferRequest: Sendable {
  var url: String
  /// Extra headers in order, including Range and If-Range when resuming.
  var headers: [(name: String, value: String)]
  var userAgent: String
  /// Shared receive budget, or nil for no limit.
  var rateLimiter: RateLimiter?
  /// Seconds without a byte (or to connect) before the transfer fails as timed out.
  var stallTimeout: TimeInterval
  var verifyTLS: Bool
  var maxRedirects: Int = 10
  /// Bytes the transport may receive per read: larger reads cost less CPU per byte.
  var receiveBufferSize = 128 * 1024
}

/// Response header fields in arrival order, looked up case-insensitively.
struct HTTPHeaders: Sendable, Equatable {
  private(set) var fields: [(name: String, value: String)] = []

  init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

  mutating func add(name: String, value: String) { fields.append((name, value)) }

  /// The first field with this name.
  subscript(_ name: String) -> String? {
    fields.first { $0.name.caseInsensitiveEquals(name) }?.value
  }

  static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
    lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
  }
}

extension String {
  func caseInsensitiveEquals(_ other: String) -> Bool {
    utf8.count == other.utf8.count && lowercased() == other.lowercased()
  }
}

/// The final response's status line and headers (redirect hops are not reported).
struct ResponseHead: Sendable, Equatable {
  var status: Int
  var headers: HTTPHeaders
  /// The URL that produced this response, after redirects.
  var finalURL: String
}

/// What the sink wants done with a response's body.
enum BodyDisposition: Sendable, Equatable {
  /// Deliver the body to `transferDidReceive`.
  case deliver
  /// Read and drop the body (an error page), then finish normally.
  case discard
  /// Stop the transfer now; it finishes with `.aborted`.
  case abort
}

/// Why a transfer ended without completing.
struct TransportFailure: Error, Sendable, Equatable {
  enum Kind: Sendable, Equatable {
    /// DNS, refused, unreachable.
    case connect
    /// The connection broke mid-transfer, or the body ended before its declared length.
    case interrupted
    /// No bytes for the stall timeout.
    case timedOut
    /// Certificate or handshake problem.
    case tls
    /// More than the allowed redirects.
    case tooManyRedirects
    /// Malformed URL or unsupported scheme.
    case badURL
    /// The server's reply could not be parsed as HTTP.
    case malformedResponse
    /// The sink asked to stop (abort, or a write that failed).
    case aborted
    /// Cancelled by the engine (pause or cancel).
    case cancelled
    case other
  }

  var kind: Kind
  /// The transport's own words, e.g. libcurl's error buffer.
  var message: String
  /// The transport's code (a CURLcode), for logs.
  var code: Int32
}

/// Receives one transfer's events, on the transport's event thread, in order:
/// at most one head, body chunks, then exactly one finish. Calls must return quickly.
protocol TransferSink: AnyObject, Sendable {
  func transferDidReceiveHead(_ head: ResponseHead) -> BodyDisposition
  /// Returns false to abort the transfer (e.g. a write failed).
  func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool
  /// `failure` is nil when the response was received completely.
  func transferDidFinish(head: ResponseHead?, failure: TransportFailure?)
}

/// Lets the engine stop a transfer early; the sink still gets its finish call.
protocol TransferHandle: Sendable {
  func cancel()
}

/// Moves bytes for the engine. The libcurl transport is the one in use; a URLSession one can follow for Apple platforms.
protocol Transport: Sendable {
  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle
}
