import Dispatch
import FoundationEssentials

/// The validators and size of the version of a resource whose bytes we hold.
package struct ResourceIdentity: Equatable, Sendable {
  package var totalBytes: Int64?
  package var etag: String?
  package var lastModified: String?

  package init(totalBytes: Int64?, etag: String?, lastModified: String?) {
    self.totalBytes = totalBytes
    self.etag = etag
    self.lastModified = lastModified
  }

  package init(_ state: ResumeState) {
    self.init(totalBytes: state.totalBytes, etag: state.etag, lastModified: state.lastModified)
  }

  /// The `If-Range` value that makes a server send the range only for this version:
  /// the strong ETag, else Last-Modified, else nothing (then the Content-Range total is the only guard).
  package var ifRangeValue: String? {
    if let etag, let tag = EntityTag(headerValue: etag), !tag.isWeak { return etag }
    return lastModified
  }
}

/// The response facts that decide what to do with a body, parsed once from the head.
package struct ResponseSummary: Equatable, Sendable {
  package var status: Int
  package var contentRange: ContentRange?
  package var contentLength: Int64?
  package var etag: String?
  package var lastModified: String?
  package var retryAfter: RetryAfter?

  init(
    status: Int, contentRange: ContentRange? = nil, contentLength: Int64? = nil,
    etag: String? = nil, lastModified: String? = nil, retryAfter: RetryAfter? = nil
  ) {
    self.status = status
    self.contentRange = contentRange
    self.contentLength = contentLength
    self.etag = etag
    self.lastModified = lastModified
    self.retryAfter = retryAfter
  }

  package init(_ head: ResponseHead) {
    self.init(
      status: head.status,
      contentRange: head.headers["Content-Range"].flatMap(ContentRange.init(headerValue:)),
      contentLength: head.headers["Content-Length"].flatMap { Int64($0.trimmingWhitespace()) }
        .flatMap { $0 >= 0 ? $0 : nil },
      etag: head.headers["ETag"],
      lastModified: head.headers["Last-Modified"],
      retryAfter: head.headers["Retry-After"].flatMap(RetryAfter.init(headerValue:)))
  }

  /// The identity of the version this response carries, when it carries the whole of it or a range of it.
  package var identity: ResourceIdentity {
    let total: Int64? =
      switch contentRange {
      case .range(_, _, let total): total
      case .unsatisfied(let total): total
      case nil: status == 200 ? contentLength : nil
      }
    return ResourceIdentity(totalBytes: total, etag: etag, lastModified: lastModified)
  }
}

/// What to do with a response to a request for the bytes from `offset` on.
package enum RangeResponseAction: Equatable, Sendable {
  /// The response continues our bytes: write its body at `offset`.
  case append(at: Int64)
  /// The response carries the whole resource (a new version, or a server without ranges):
  /// drop what we hold and write this body from byte 0.
  case replaceFromStart
  /// We already hold every byte (416 for a range at the very end).
  case alreadyComplete
  /// The response cannot be used without risking a write at a wrong offset:
  /// drop what we hold and ask again for the whole resource.
  case restart(reason: String)
  /// A temporary server condition; try again later.
  case retry(HaulError, retryAfter: RetryAfter?)
  /// A failure that retrying will not fix.
  case fail(HaulError)
}

/// The decision at the heart of resuming, as a pure function: given what we hold and what the
/// server answered, where (if anywhere) may the body be written?
package enum RangeResponse {
  /// - Parameters:
  ///   - offset: the first byte asked for (`Range: bytes=offset-`), 0 when no Range was sent.
  ///   - held: the identity of the bytes held or being written, nil when there are none.
  ///   - sentRange: whether a Range header was sent (a range from byte 0 counts).
  package static func decide(
    offset: Int64, sentRange: Bool? = nil, held: ResourceIdentity?, response: ResponseSummary
  ) -> RangeResponseAction {
    let status = response.status
    switch status {
    case 200:
      if sentRange ?? (offset > 0) { return .replaceFromStart }
      // A whole response with bytes of another version held (or being written) elsewhere
      // replaces them rather than joining them.
      if let held, case .different = Representation.compare(held, response.identity) {
        return .replaceFromStart
      }
      return .append(at: 0)
    case 206:
      guard case .range(let first, let last, _)? = response.contentRange else {
        return .restart(reason: "the server sent a partial response without a usable Content-Range")
      }
      guard first == offset else {
        return .restart(
          reason: "the server sent bytes from \(first) when asked for bytes from \(offset)")
      }
      if let length = response.contentLength, length != last - first + 1 {
        return .restart(reason: "the server's Content-Length does not match its Content-Range")
      }
      // Whatever the offset (with several connections a range from byte 0 is one segment among
      // others), bytes held elsewhere must be of this version. Validators that say nothing let
      // the Content-Range total stand guard alone.
      if let held, case .different(let reason) = Representation.compare(held, response.identity) {
        return .restart(reason: reason)
      }
      return .append(at: offset)
    case 416:
      guard offset > 0 else {
        return .fail(HaulError(.protocol, "the server refused a request for the whole file (416)"))
      }
      if case .unsatisfied(let total)? = response.contentRange {
        if total == offset, held?.totalBytes == nil || held?.totalBytes == total {
          return .alreadyComplete
        }
        if total < offset {
          // `offset` may be before the end of the bytes held (an overlap): not their size.
          return .restart(reason: "the file on the server (\(total) bytes) is shorter than the partial file")
        }
      }
      return .restart(reason: "the server could not serve the rest of the file (416)")
    case 408, 429, 500, 502, 503, 504, 509, 520...599:
      return .retry(
        HaulError(.server, answered(status)),
        retryAfter: response.retryAfter)
    case 401:
      return .fail(
        HaulError(
          .authentication, answered(status),
          hint: LibraryWording.passCredentials))
    case 407:
      // The proxy's login, not the server's: -u would be sent to the server.
      return .fail(
        HaulError(
          .authentication, "the proxy answered 407 \(statusText(407))",
          hint: LibraryWording.proxyLogin))
    case 300..<400:
      return .fail(HaulError(.protocol, "the server answered \(status) without a usable redirect"))
    case 400..<600:
      return .fail(HaulError(.server, answered(status)))
    default:
      return .fail(HaulError(.protocol, "the server answered with unexpected status \(status)"))
    }
  }

  /// "the server answered 404 Not Found", or "… answered 451" for a status without a known
  /// reason (no trailing blank).
  package static func answered(_ status: Int) -> String {
    let text = statusText(status)
    return "the server answered \(status)" + (text.isEmpty ? "" : " " + text)
  }

  package static func statusText(_ status: Int) -> String {
    switch status {
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 407: "Proxy Authentication Required"
    case 408: "Request Timeout"
    case 410: "Gone"
    case 416: "Range Not Satisfiable"
    case 429: "Too Many Requests"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    default: ""
    }
  }
}

/// Whether a finished file still matches the server's copy, from a response to
/// `Range: bytes=<size>-` with `If-Range` (or a plain GET).
package enum FinishedFileCheck {
  package enum Verdict: Equatable, Sendable {
    case unchanged
    case changed
    /// The response says nothing about the version (an error status); handle it as usual.
    case undecided
  }

  package static func compare(recorded: ResourceIdentity, size: Int64, response: ResponseSummary) -> Verdict {
    switch response.status {
    case 416:
      if case .unsatisfied(let total)? = response.contentRange {
        return total == size ? .unchanged : .changed
      }
      return .changed
    case 200, 206:
      // Only a whole 200 of the same size, with no validator saying otherwise, says
      // "unchanged" (without validators the size is all there is to go by, as for wget -c):
      // a 206 to a range past the end means the file grew.
      let now = response.identity
      var held = recorded
      held.totalBytes = size
      guard response.status == 200, now.totalBytes == size else { return .changed }
      if case .different = Representation.compare(held, now) { return .changed }
      return .unchanged
    default:
      return .undecided
    }
  }
}
