/// A half-open byte range `[start, end)` of the resource.
package struct ByteRange: Codable, Equatable, Sendable {
  package var start: Int64
  package var end: Int64
  package var count: Int64 { end - start }

  package init(start: Int64, end: Int64) {
    self.start = start
    self.end = end
  }
}

/// What a partial download holds and which version of the resource those bytes belong to.
/// Persisted in the sidecar file; it never claims bytes that are not durable in the `.part` file.
package struct ResumeState: Codable, Equatable, Sendable {
  /// The URL the user asked for.
  package var url: String
  /// The URL after redirects when these bytes were fetched.
  package var finalURL: String?
  /// The full size, when the server said.
  package var totalBytes: Int64?
  /// The ETag header value (strong or weak) of the version held.
  package var etag: String?
  /// The Last-Modified header value of the version held.
  package var lastModified: String?
  /// Durable byte ranges, sorted and disjoint. One connection keeps a single prefix `[0, n)`.
  package var ranges: [ByteRange] = []
  /// Digests of the whole file the server announced (`Repr-Digest`, `Digest`), by algorithm name.
  package var digests: [String: String]?

  package init(
    url: String, finalURL: String? = nil, totalBytes: Int64? = nil, etag: String? = nil,
    lastModified: String? = nil, ranges: [ByteRange] = [], digests: [String: String]? = nil
  ) {
    self.url = url
    self.finalURL = finalURL
    self.totalBytes = totalBytes
    self.etag = etag
    self.lastModified = lastModified
    self.ranges = ranges
    self.digests = digests
  }

  /// Bytes held from the start without a gap: where a single-connection resume continues.
  package var contiguousBytes: Int64 {
    guard let first = ranges.first, first.start == 0 else { return 0 }
    return first.end
  }

  /// Bytes held in all ranges.
  package var heldBytes: Int64 { ranges.reduce(0) { $0 + $1.count } }

  /// Sets the held bytes to the prefix `[0, bytes)`.
  package mutating func setContiguous(_ bytes: Int64) {
    ranges = bytes > 0 ? [ByteRange(start: 0, end: bytes)] : []
  }
}
