/// A link that expired mid-download: a signed CDN or S3 link whose time ran out answers 401,
/// 403 or 410 to a request that continues bytes already held. Then a fresh URL of the same
/// file (`DownloadOptions.refreshURL`) can carry on, once its first answer proves it serves
/// the same file (the check a moved URL goes through, `DownloadMachine.pendingProof`).
///
/// ```swift
/// ExpiredLink.seemsExpired(status: 403, heldBytes: 200_000)   // true
/// ExpiredLink.seemsExpired(status: 403, heldBytes: 0)         // false: refused from the start
/// ```
///
/// Carried as a failure's `HaulError.underlying`, so the run's owner knows to refresh.
package struct ExpiredLink: Error, Sendable, Equatable {
  /// The status the link answered.
  package let status: Int
  /// The bytes held when it did.
  package let heldBytes: Int64

  /// Fresh URLs asked for in one `run()`: a refresher that keeps handing out dead links ends.
  package static let maxRefreshes = 3

  package init(status: Int, heldBytes: Int64) {
    self.status = status
    self.heldBytes = heldBytes
  }

  /// Whether an answer of `status`, with `heldBytes` held, looks like an expired link rather
  /// than a plain refusal. A `401` to a request that carried a login (`credentialsSent`) is
  /// that login refused, not the link.
  package static func seemsExpired(status: Int, heldBytes: Int64, credentialsSent: Bool = false) -> Bool {
    guard heldBytes > 0 else { return false }
    return status == 401 ? !credentialsSent : [403, 410].contains(status)
  }

  /// What happened, for the message: "the link seems to have expired (403 Forbidden after …)".
  package var description: String {
    "the link seems to have expired (\(RangeResponse.answered(status)) with \(ByteQuantity.format(heldBytes)) held)"
  }

  /// Whether another fresh URL may be asked for after `done` refreshes.
  package static func mayRefresh(after done: Int) -> Bool { done < maxRefreshes }
}
