/// A file served by `TestServer` at a path, with its validators and fault switches.
public struct TestResource: Sendable {
  public var body: [UInt8]
  /// Full header value, e.g. `"\"v1\""` or `"W/\"x\""`.
  public var etag: String?
  /// Header value in IMF-fixdate form, e.g. `"Sun, 06 Nov 1994 08:49:37 GMT"`.
  public var lastModified: String?
  public var contentDisposition: String?
  /// Sent as `Content-Type` when set (no `Content-Type` header otherwise).
  public var contentType: String?
  /// More response headers, sent as given (e.g. `Repr-Digest`).
  public var extraHeaders: [(String, String)] = []
  /// When set, every 200/206 carries `Content-Digest: <value for the bytes it sends>` (computed
  /// before any `corruptByte` fault, as a server whose data goes bad on the way would).
  public var contentDigest: (@Sendable (ArraySlice<UInt8>) -> String)?
  public var faults: TestFaults

  public init(
    body: [UInt8], etag: String? = nil, lastModified: String? = nil, contentDisposition: String? = nil,
    faults: TestFaults = .init(), contentType: String? = nil
  ) {
    self.body = body
    self.etag = etag
    self.lastModified = lastModified
    self.contentDisposition = contentDisposition
    self.faults = faults
    self.contentType = contentType
  }

  /// Deterministic pseudo-random bytes (splitmix64), fast enough for tens of MiB.
  public static func random(size: Int, seed: UInt64) -> [UInt8] {
    precondition(size >= 0, "size must not be negative")
    var state = seed
    func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      let raw = UnsafeMutableRawBufferPointer(buffer)
      var index = 0
      while index + 8 <= size {
        raw.storeBytes(of: next().littleEndian, toByteOffset: index, as: UInt64.self)
        index += 8
      }
      if index < size {
        let word = next()
        for offset in 0..<(size - index) {
          buffer[index + offset] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(offset)))
        }
      }
      initialized = size
    }
  }
}

/// Misbehaviours a `TestResource` can be switched into.
public struct TestFaults: Sendable {
  /// Always 200 with the full body (and no `Accept-Ranges`).
  public var ignoreRange = false
  /// Apply Range even when If-Range does not match (a broken server).
  public var ignoreIfRange = false
  /// Close the connection abruptly after sending this many body bytes of a response (only when the
  /// response body is longer than that)...
  public var dropAfterBytes: Int? = nil
  /// ...for this many responses (per path, counted since the last `setResource`), then behave.
  public var dropTimes: Int = .max
  /// Send this many body bytes then go silent (socket open, no more bytes) until the client closes the
  /// connection or the server stops.
  public var stallAfterBytes: Int? = nil
  /// How many responses stall (per path, counted since the last `setResource`), then behave.
  public var stallTimes: Int = .max
  /// `Transfer-Encoding: chunked` (4 KiB chunks), no `Content-Length`.
  public var chunked = false
  /// Added to both byte positions in `Content-Range` of 206 replies (the body is still the requested bytes
  /// and the stated length still matches it): a server that reports the wrong offset.
  public var contentRangeShift: Int = 0
  /// Report this total in `Content-Range` (206 and 416) instead of the real one.
  public var wrongTotal: Int? = nil
  /// HEAD gets 405.
  public var refuseHEAD = false
  /// Throttle body sending (sleep-based pacing in slices of at most 16 KiB). `updateFaults`
  /// changes it for responses in flight too.
  public var bytesPerSecond: Int? = nil
  /// When set, requests without exactly this `Authorization` value get 401 with `WWW-Authenticate`.
  public var requireAuthorization: String? = nil
  /// Flip this byte (an offset in the whole body) in 206 responses that include it...
  public var corruptByte: Int? = nil
  /// ...for this many of them (per path, counted since the last `setResource`).
  public var corruptTimes: Int = .max
  /// Every second request (the 2nd, 4th, … since the last `setResource`) ignores its Range and
  /// gets the whole file with 200: a server behind a balancer whose nodes disagree.
  public var alternateIgnoringRange = false
  /// Send this `Content-Length` instead of the real one (the body sent is still the real one,
  /// after which the connection closes): an absurd length, e.g. 2^60.
  public var claimedLength: Int64? = nil
  /// After this many responses (per path, counted since the last `setResource`), every request
  /// gets `expiredStatus`: a signed link whose time ran out mid-download.
  public var expireAfterResponses: Int? = nil
  public var expiredStatus = 403

  public init(
    ignoreRange: Bool = false, ignoreIfRange: Bool = false, dropAfterBytes: Int? = nil,
    dropTimes: Int = .max, stallAfterBytes: Int? = nil, stallTimes: Int = .max, chunked: Bool = false,
    contentRangeShift: Int = 0, wrongTotal: Int? = nil, refuseHEAD: Bool = false,
    bytesPerSecond: Int? = nil, requireAuthorization: String? = nil, alternateIgnoringRange: Bool = false,
    claimedLength: Int64? = nil
  ) {
    self.alternateIgnoringRange = alternateIgnoringRange
    self.claimedLength = claimedLength
    self.ignoreRange = ignoreRange
    self.ignoreIfRange = ignoreIfRange
    self.dropAfterBytes = dropAfterBytes
    self.dropTimes = dropTimes
    self.stallAfterBytes = stallAfterBytes
    self.stallTimes = stallTimes
    self.chunked = chunked
    self.contentRangeShift = contentRangeShift
    self.wrongTotal = wrongTotal
    self.refuseHEAD = refuseHEAD
    self.bytesPerSecond = bytesPerSecond
    self.requireAuthorization = requireAuthorization
  }
}

/// A one-shot reply, consumed by the next request to its path before normal resource behaviour.
public enum ScriptedReply: Sendable {
  /// Any status with extra headers and a body; `Content-Length` is added unless given.
  case status(Int, headers: [(String, String)] = [], body: [UInt8] = [])
  /// 301/302/303/307/308 with `Location`.
  case redirect(Int, location: String)
  /// Read the request, then close without replying.
  case dropConnection
}

/// An ordered list of header fields with case-insensitive lookup.
public struct HeaderFields: Sendable, CustomStringConvertible {
  public var entries: [(name: String, value: String)]

  public init(_ entries: [(name: String, value: String)] = []) { self.entries = entries }

  /// The first value of the field `name` (case-insensitive), or nil.
  public subscript(_ name: String) -> String? {
    entries.first { $0.name.lowercased() == name.lowercased() }?.value
  }

  /// Every value of the field `name` (case-insensitive), in order.
  public func values(_ name: String) -> [String] {
    entries.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
  }

  public func contains(_ name: String) -> Bool { self[name] != nil }

  public var description: String {
    entries.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
  }
}

/// Which kind of reply the server gave to a request.
public enum ReplyKind: Sendable, Equatable {
  /// Normal resource behaviour (200, 206, 416, or HEAD thereof).
  case resource
  /// A reply from `enqueue` (including `.dropConnection`).
  case scripted
  /// A permanent alias from `setRedirect`.
  case redirect
  case notFound
  case unauthorized
  case methodNotAllowed
  case badRequest
}

/// A request as the server saw it, and what it answered.
public struct RecordedRequest: Sendable, CustomStringConvertible {
  public var method: String
  /// The raw request target, e.g. `/dir/a%20b.bin?x=1`.
  public var path: String
  /// e.g. `HTTP/1.1`.
  public var version: String
  public var headers: HeaderFields
  /// Increments per accepted TCP connection, starting at 1; equal ids mean the same connection.
  public var connectionID: Int
  public var reply: ReplyKind
  /// The status sent, or nil when the connection was dropped without a reply.
  public var status: Int?
  /// The `Content-Range` value sent, if any.
  public var contentRange: String?
  /// Whether a drop or stall fault was applied to this response.
  public var faulted: Bool

  public func header(_ name: String) -> String? { headers[name] }

  public var description: String {
    "#\(connectionID) \(method) \(path) -> \(status.map(String.init) ?? "dropped") (\(reply))"
  }
}
