import Testing

@testable import HaulCore

/// Which answers look like a link that expired mid-download, and that the machine says so.
@Suite struct ExpiredLinkTests {
  @Test(
    arguments: [
      (401, 1, true), (403, 200_000, true), (410, 5, true),
      (401, 0, false), (403, 0, false), (410, 0, false),
      (404, 200_000, false), (407, 200_000, false), (500, 200_000, false), (416, 200_000, false),
    ] as [(Int, Int64, Bool)])
  func seemsExpired(_ status: Int, _ held: Int64, _ expected: Bool) {
    #expect(ExpiredLink.seemsExpired(status: status, heldBytes: held) == expected)
  }

  /// With a login sent, a 401 is the login refused (a wrong password), not an expired link.
  @Test func aRefusedLoginIsNotAnExpiredLink() {
    #expect(!ExpiredLink.seemsExpired(status: 401, heldBytes: 100, credentialsSent: true))
    #expect(ExpiredLink.seemsExpired(status: 403, heldBytes: 100, credentialsSent: true))
  }

  @Test func refreshesAreBounded() {
    #expect((0..<ExpiredLink.maxRefreshes).allSatisfy { ExpiredLink.mayRefresh(after: $0) })
    #expect(!ExpiredLink.mayRefresh(after: ExpiredLink.maxRefreshes))
  }

  @Test func theDescriptionNamesTheStatusAndTheBytes() {
    #expect(
      ExpiredLink(status: 410, heldBytes: 42).description
        == "the link seems to have expired (the server answered 410 Gone with 42 B held)")
  }

  /// A 403 to a range that continues held bytes fails with an `ExpiredLink` cause; one with
  /// nothing held fails without.
  @Test(arguments: [(400 as Int64, true), (0 as Int64, false)])
  func theMachineMarksTheFailure(_ held: Int64, _ marked: Bool) {
    let url = "http://h/f"
    var machine = DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: url, fixedConnections: 1,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3),
        minimumSplit: 100, checkpointInterval: 1_000, progressInterval: 1_000))
    let ranges = held > 0 ? [ByteRange(start: 0, end: held)] : []
    _ = machine.begin(
      .opened(ResumeState(url: url, finalURL: url, totalBytes: 1000, etag: "\"a\"", ranges: ranges)), now: 0)
    let facts = ResponseFacts(
      summary: ResponseSummary(status: 403, contentRange: nil, contentLength: 0, etag: nil),
      finalURL: url, suggestedName: "f")
    guard case .decided(.abort, _, let refused) = machine.receiveHead(1, facts, now: 1) else {
      Issue.record("the 403 was not refused")
      return
    }
    let actions =
      refused
      + machine.transferEnded(1, failure: TransportFailure(kind: .aborted, message: "", code: 0), now: 2)
    let failures = actions.compactMap { action -> HaulError? in
      if case .end(.failed(let error, _)) = action { error } else { nil }
    }
    #expect(failures.count == 1, "\(actions)")
    #expect(
      (failures.first?.underlying as? ExpiredLink)
        == (marked ? ExpiredLink(status: 403, heldBytes: held) : nil))
    #expect(failures.first?.message == "the server answered 403 Forbidden")
  }
}
