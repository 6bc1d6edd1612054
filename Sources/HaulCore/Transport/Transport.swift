import Dispatch
import FoundationEssentials

/// One GET as the engine wants it (HTTP, or FTP spoken as HTTP: see CurlTransport); the
/// transport adds nothing of its own beyond redirects and what `tls` and `network` ask for.
package struct TransferRequest: Sendable {
  package var url: String
  /// Extra headers in order, including Range and If-Range when resuming.
  package var headers: [(name: String, value: String)]
  package var userAgent: String
  /// Receive budgets this transfer spends from (its download's, a manager's overall one);
  /// the transfer waits whenever any of them is spent.
  package var rateLimiters: [RateLimiter] = []
  /// Seconds without a byte (or to connect) before the transfer fails as timed out.
  package var stallTimeout: TimeInterval
  package var verifyTLS: Bool
  package var tls: TLSOptions
  /// Credentials, cookies, proxy, resolution, the redirect limit and the largest file accepted.
  package var network: NetworkOptions
  /// Bytes the transport may receive per read: larger reads cost less CPU per byte.
  package var receiveBufferSize = 128 * 1024
  /// Ask for the body only when the server's copy changed after this Unix time (If-Modified-Since,
  /// FTP's MDTM); an unchanged copy is answered `304` with no body.
  package var ifModifiedSince: Int64?

  package init(
    url: String, headers: [(name: String, value: String)], userAgent: String,
    rateLimiters: [RateLimiter] = [],
    stallTimeout: TimeInterval, verifyTLS: Bool, tls: TLSOptions = TLSOptions(),
    network: NetworkOptions = NetworkOptions(), receiveBufferSize: Int = 128 * 1024
  ) {
    self.url = url
    self.headers = headers
    self.userAgent = userAgent
    self.rateLimiters = rateLimiters
    self.stallTimeout = stallTimeout
    self.verifyTLS = verifyTLS
    self.tls = tls
    self.network = network
    self.receiveBufferSize = receiveBufferSize
  }
}

/// Response header fields in arrival order, looked up case-insensitively.
package struct HTTPHeaders: Sendable, Equatable {
  package private(set) var fields: [(name: String, value: String)] = []

  package init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

  package mutating func add(name: String, value: String) { fields.append((name, value)) }

  /// The first field with this name.
  package subscript(_ name: String) -> String? {
    fields.first { $0.name.caseInsensitiveEquals(name) }?.value
  }

  package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
    lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
  }
}

extension String {
  package func caseInsensitiveEquals(_ other: String) -> Bool {
    utf8.count == other.utf8.count && lowercased() == other.lowercased()
  }
}

/// The final response's status line and headers (redirect hops are not reported).
package struct ResponseHead: Sendable, Equatable {
  package var status: Int
  package var headers: HTTPHeaders
  /// The URL that produced this response, after redirects.
  package var finalURL: String

  package init(status: Int, headers: HTTPHeaders, finalURL: String) {
    self.status = status
    self.headers = headers
    self.finalURL = finalURL
  }
}

/// What the sink wants done with a response's body.
package enum BodyDisposition: Sendable, Equatable {
  /// Deliver the body to `transferDidReceive`.
  case deliver
  /// Read and drop the body (an error page), then finish normally.
  case discard
  /// Stop the transfer now; it finishes with `.aborted`.
  case abort
}

/// Why a transfer ended without completing.
package struct TransportFailure: Error, Sendable, Equatable {
  package enum Kind: Sendable, Equatable {
    /// The host name does not resolve (retrying does not help).
    case resolve
    /// Refused, unreachable, or the TLS handshake failed (a server that does not speak TLS there).
    case connect
    /// The connection broke mid-transfer, or the body ended before its declared length.
    case interrupted
    /// No bytes for the stall timeout.
    case timedOut
    /// The server's certificate could not be verified, or the client's could not be used.
    case tls
    /// An SFTP server's host key is not the one known_hosts holds for it (or none is there).
    case hostKey
    /// More than the allowed redirects.
    case tooManyRedirects
    /// Malformed URL or unsupported scheme.
    case badURL
    /// A redirect to a scheme haul does not follow (`file://`, `ftp://`…): the server's
    /// doing, not the URL's given.
    case redirectRefused
    /// The server's reply could not be parsed as HTTP.
    case malformedResponse
    /// The sink asked to stop (abort, or a write that failed).
    case aborted
    /// Cancelled by the engine (pause or cancel).
    case cancelled
    case other
  }

  package var kind: Kind
  /// The transport's own words, e.g. libcurl's error buffer.
  package var message: String
  /// The transport's code (a CURLcode), for logs.
  package var code: Int32

  package init(kind: Kind, message: String, code: Int32) {
    self.kind = kind
    self.message = message
    self.code = code
  }
}

/// What the sink did with body bytes.
package enum ReceiveResult: Sendable, Equatable {
  /// All of them were taken.
  case accepted
  /// None were taken: offer them again after `TransferHandle.resumeReceiving()` (the sink's
  /// buffers are all waiting for the disk). The transfer receives nothing meanwhile.
  case pause
  /// Stop the transfer; it finishes with `.aborted`.
  case abort
}

/// Receives one transfer's events, on the transport's event thread, in order:
/// at most one head, body chunks, then exactly one finish. Calls must return quickly.
package protocol TransferSink: AnyObject, Sendable {
  func transferDidReceiveHead(_ head: ResponseHead) -> BodyDisposition
  func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> ReceiveResult
  /// `failure` is nil when the response was received completely.
  func transferDidFinish(head: ResponseHead?, failure: TransportFailure?)
}

/// Lets the engine stop a transfer early (the sink still gets its finish call), and resume
/// one whose sink paused it.
package protocol TransferHandle: Sendable {
  func cancel()
  /// Offers the bytes the sink refused with `.pause` again; harmless when not paused.
  func resumeReceiving()
}

/// Moves bytes for the engine. The libcurl transport is the one in use; a URLSession one can follow for Apple platforms.
package protocol Transport: Sendable {
  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle
}
