/// A half-open byte range `[start, end)` of the resource.
struct ByteRange: Codable, Equatable, Sendable {
  var start: Int64
  var end: Int64
  var count: Int64 { end - start }
}

/// What a partial download holds and which version of the resource those bytes belong to.
/// Persisted in the sidecar file; it never claims bytes that are not durable in the `.part` file.
struct ResumeState: Codable, Equatable, Sendable {
  /// The URL the user asked for.
  var url: String
  /// The URL after redirects when these bytes were fetched.
  var finalURL: String?
  /// The full size, when the server said.
  var totalBytes: Int64?
  /// The ETag header value (strong or weak) of the version held.
  var etag: String?
  /// The Last-Modified header value of the version held.
  var lastModified: String?
  /// Durable byte ranges, sorted and disjoint. One connection keeps a single prefix `[0, n)`.
  var ranges: [ByteRange] = []
  /// Digests of the whole file the server announced (`Repr-Digest`, `Digest`), by algorithm name.
  var digests: [String: String]?

  /// Bytes held from the start without a gap: where a single-connection resume continues.
  var contiguousBytes: Int64 {
    guard let first = ranges.first, first.start == 0 else { return 0 }
    return first.end
  }

  /// Bytes held in all ranges.
  var heldBytes: Int64 { ranges.reduce(0) { $0 + $1.count } }

  /// Sets the held bytes to the prefix `[0, bytes)`.
  mutating func setContiguous(_ bytes: Int64) {
    ranges = bytes > 0 ? [ByteRange(start: 0, end: bytes)] : []
  }
}
