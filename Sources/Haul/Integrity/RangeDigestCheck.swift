/// A `206` response's RFC 9530 `Content-Digest`: the digest of this part alone. Its body is
/// hashed as it arrives, so a corrupt range is caught when it completes and fetched again
/// before anything relies on it. Not thread-safe: one connection's sink owns it.
final class RangeDigestCheck {
  /// The bytes the response carries.
  let range: ByteRange
  let algorithm: Checksum.Algorithm
  /// Lower-case hex, as the server announced it.
  let expected: String
  private let digest: MessageDigest
  private var received: Int64 = 0

  enum Result: Equatable {
    case matched
    /// The body was complete and its digest is `actual`.
    case mismatched(actual: String)
    /// Fewer or more bytes than the range arrived; nothing can be said.
    case incomplete
  }

  /// nil unless `head` is a `206` of `range` with a usable `Content-Digest` of unencoded bytes.
  init?(head: ResponseHead, range: ByteRange) {
    guard head.status == 206, head.headers["Content-Encoding"] == nil,
      let value = head.headers["Content-Digest"],
      let (algorithm, expected) = ServerDigests.strongest(ServerDigests.parseStructured(value)),
      let digest = try? MessageDigest(algorithm.digest)
    else { return nil }
    self.range = range
    self.algorithm = algorithm
    self.expected = expected
    self.digest = digest
  }

  func update(_ bytes: UnsafeRawBufferPointer) {
    digest.update(bytes)
    received += Int64(bytes.count)
  }

  /// Call once, after the body ended without a transfer error.
  func finish() -> Result {
    guard received == range.count else { return .incomplete }
    let actual = MessageDigest.hex(digest.finish())
    return actual == expected ? .matched : .mismatched(actual: actual)
  }
}

@available(*, unavailable)
extension RangeDigestCheck: Sendable {}
