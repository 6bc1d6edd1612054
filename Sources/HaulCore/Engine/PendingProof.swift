/// Why held bytes must be proven before a byte is appended to them: only the first response
/// can show they are the start of the file this download's URL serves.
package enum PendingProof: Sendable, Equatable {
  /// They came from another URL (a moved or re-signed link, issue 11 part 4). Once proven,
  /// the state names the new URL and `finalURL`, the final URL (after redirects) of the new
  /// URL's response, kept here until then: the state still binds the bytes to the old one.
  case movedFrom(String, finalURL: String? = nil)
  /// A partial Haul did not make (`StartPoint.foreignPartial`, `--continue`): only the bytes
  /// the first response repeats (its overlap) prove them; never a start over that would
  /// replace them.
  case foreignPartial

  /// The proof `start` needs, or nil: bytes Haul saved for this very URL, or none held.
  package init?(_ start: StartPoint, recordedURL: String) {
    switch start {
    case .foreignPartial(let state) where !state.ranges.isEmpty: self = .foreignPartial
    case .opened(let state) where !state.ranges.isEmpty && state.url != recordedURL:
      self = .movedFrom(state.url)
    default: return nil
    }
  }

  /// The URL the held bytes came from, when they came from another one.
  package var movedFrom: String? {
    if case .movedFrom(let url, _) = self { return url }
    return nil
  }

  /// The error that ends the download when a response does not prove the bytes, `why` saying
  /// how; the held bytes are left as they were (exit 3).
  package func failure(_ why: String) -> HaulError {
    switch self {
    case .movedFrom(let url, _):
      HaulError(
        .fileSystem,
        "the partial download came from another URL (\(url)), and the new one may serve another file: \(why); "
          + "the partial was left as it was",
        hint: LibraryWording.fetchMovedAnew)
    case .foreignPartial:
      // As wget -c leaves a file it cannot continue.
      HaulError(
        .fileSystem,
        "the partial file to continue may not be the start of this URL's file: \(why); it was left as it was",
        hint: LibraryWording.replaceForeignPartial,
        underlying: UnprovenPartial())
    }
  }
}
