/// The one rule for "do these bytes belong to the same representation?" (RFC 9110 §8.8),
/// used by every decision that splices, keeps or drops bytes: a resumed range, a finished
/// file's check, a secondary connection answered with the whole file.
///
/// Precedence: sizes that are both known and differ say "different"; then the ETags decide
/// when both sides have one; then the Last-Modified dates when both have one; otherwise the
/// validators say nothing (`unknown`), and each caller decides how much that is worth.
package enum Representation {
  package enum Verdict: Equatable, Sendable {
    case same
    /// What changed, in words for a message.
    case different(String)
    /// No validator in common; the sizes (if known) agree.
    case unknown
  }

  package static func compare(_ held: ResourceIdentity, _ other: ResourceIdentity) -> Verdict {
    if let before = held.totalBytes, let now = other.totalBytes, before != now {
      return .different("the file on the server changed size (\(before) → \(now) bytes)")
    }
    if let before = held.etag, let now = other.etag {
      return before == now ? .same : .different("the file on the server changed (ETag \(before) → \(now))")
    }
    if let before = held.lastModified, let now = other.lastModified {
      return before == now
        ? .same : .different("the file on the server changed (Last-Modified \(before) → \(now))")
    }
    return .unknown
  }

  /// Whether `other` may stand for `held` when the validators say nothing: only when both
  /// sizes are known and equal.
  package static func isSameOrSameSize(_ held: ResourceIdentity, _ other: ResourceIdentity) -> Bool {
    switch compare(held, other) {
    case .same: true
    case .different: false
    case .unknown: held.totalBytes != nil && held.totalBytes == other.totalBytes
    }
  }
}

extension Representation {
  /// Whether `other` (a response of another URL) proves it is the representation held: the
  /// same size, and the same strong ETag or the same Last-Modified.
  package static func provesSame(_ held: ResourceIdentity, _ other: ResourceIdentity) -> Bool {
    guard compare(held, other) == .same, let total = held.totalBytes, total == other.totalBytes else {
      return false
    }
    if let etag = held.etag, etag == other.etag, let tag = EntityTag(headerValue: etag), !tag.isWeak {
      return true
    }
    return held.lastModified != nil && held.lastModified == other.lastModified
  }
}
