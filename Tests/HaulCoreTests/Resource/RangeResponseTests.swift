import Testing

@testable import HaulCore

/// The resume decision as a table: what we asked for, what we hold, what came back.
@Suite struct RangeResponseTests {
  static let held = ResourceIdentity(
    totalBytes: 1000, etag: "\"a\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")

  static func response(
    _ status: Int, range: String? = nil, length: Int64? = nil, etag: String? = nil,
    lastModified: String? = nil,
    retryAfter: String? = nil
  ) -> ResponseSummary {
    ResponseSummary(
      status: status, contentRange: range.flatMap(ContentRange.init(headerValue:)), contentLength: length,
      etag: etag,
      lastModified: lastModified, retryAfter: retryAfter.flatMap(RetryAfter.init(headerValue:)))
  }

  @Test func freshDownloadWritesTheWholeBodyFromZero() {
    #expect(
      RangeResponse.decide(offset: 0, held: nil, response: Self.response(200, length: 1000)) == .append(at: 0)
    )
  }

  @Test func matchingPartialResponseIsAppended() {
    let action = RangeResponse.decide(
      offset: 400, held: Self.held,
      response: Self.response(206, range: "bytes 400-999/1000", length: 600, etag: "\"a\""))
    #expect(action == .append(at: 400))
  }

  /// With several connections a range from byte 0 is a segment like the others: another
  /// version there must not be spliced to the bytes held elsewhere (found by the machine's fuzz test).
  @Test func aRangeFromZeroOfAnotherVersionRestartsWhenBytesAreHeldElsewhere() {
    let action = RangeResponse.decide(
      offset: 0, sentRange: true, held: Self.held,
      response: Self.response(206, range: "bytes 0-399/1000", length: 400, etag: "\"b\""))
    guard case .restart(let reason) = action else {
      Issue.record("a range of another version was appended: \(action)")
      return
    }
    #expect(reason.contains("ETag"))
    #expect(
      RangeResponse.decide(
        offset: 0, sentRange: true, held: Self.held,
        response: Self.response(206, range: "bytes 0-399/1000", length: 400, etag: "\"a\"")) == .append(at: 0)
    )
  }

  @Test func fullResponseToARangeReplacesFromStart() {
    #expect(
      RangeResponse.decide(offset: 400, held: Self.held, response: Self.response(200, length: 1000))
        == .replaceFromStart)
  }

  @Test(arguments: [
    ("bytes 0-999/1000", "starts elsewhere"),
    ("bytes 401-999/1000", "starts elsewhere"),
    ("bytes 400-1199/1200", "total changed"),
  ])
  func partialResponsesThatDoNotFitRestart(range: String, why: String) {
    let action = RangeResponse.decide(
      offset: 400, held: Self.held, response: Self.response(206, range: range))
    guard case .restart = action else {
      Issue.record("\(why): expected a restart, got \(action)")
      return
    }
  }

  @Test func partialWithoutContentRangeRestarts() {
    guard case .restart = RangeResponse.decide(offset: 400, held: Self.held, response: Self.response(206))
    else {
      Issue.record("expected a restart")
      return
    }
  }

  @Test func partialWithAnotherETagRestartsEvenWhenTheRangeFits() {
    let action = RangeResponse.decide(
      offset: 400, held: Self.held, response: Self.response(206, range: "bytes 400-999/1000", etag: "\"b\""))
    guard case .restart(let reason) = action else {
      Issue.record("expected a restart, got \(action)")
      return
    }
    #expect(reason.contains("ETag"))
  }

  @Test func partialWithAnotherLastModifiedRestartsWhenThereIsNoETag() {
    let held = ResourceIdentity(totalBytes: 1000, etag: nil, lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
    let action = RangeResponse.decide(
      offset: 400, held: held,
      response: Self.response(206, range: "bytes 400-999/1000", lastModified: "Mon, 07 Nov 1994 08:49:37 GMT")
    )
    guard case .restart = action else {
      Issue.record("expected a restart, got \(action)")
      return
    }
  }

  @Test func contentLengthDisagreeingWithContentRangeRestarts() {
    let action = RangeResponse.decide(
      offset: 400, held: Self.held, response: Self.response(206, range: "bytes 400-999/1000", length: 10))
    guard case .restart = action else {
      Issue.record("expected a restart, got \(action)")
      return
    }
  }

  @Test func rangeAtTheVeryEndMeansComplete() {
    #expect(
      RangeResponse.decide(offset: 1000, held: Self.held, response: Self.response(416, range: "bytes */1000"))
        == .alreadyComplete)
  }

  @Test func partialLongerThanTheRemoteRestarts() {
    let action = RangeResponse.decide(
      offset: 1500, held: nil, response: Self.response(416, range: "bytes */1000"))
    guard case .restart(let reason) = action else {
      Issue.record("expected a restart, got \(action)")
      return
    }
    #expect(reason.contains("shorter than the partial"))
  }

  @Test func unsatisfiableWithoutTotalRestarts() {
    guard case .restart = RangeResponse.decide(offset: 10, held: nil, response: Self.response(416)) else {
      Issue.record("expected a restart")
      return
    }
  }

  @Test(arguments: [408, 429, 500, 502, 503, 504])
  func transientStatusesRetry(status: Int) {
    let action = RangeResponse.decide(offset: 0, held: nil, response: Self.response(status, retryAfter: "7"))
    #expect(
      action
        == .retry(
          HaulError(.server, "the server answered \(status) \(RangeResponse.statusText(status))"),
          retryAfter: .seconds(7)))
  }

  @Test(arguments: [
    (401, HaulError.Category.authentication), (407, .authentication), (403, .server), (404, .server),
    (410, .server), (501, .server), (301, .protocol), (199, .protocol),
  ])
  func permanentStatusesFail(status: Int, category: HaulError.Category) {
    guard case .fail(let error) = RangeResponse.decide(offset: 0, held: nil, response: Self.response(status))
    else {
      Issue.record("\(status) should fail")
      return
    }
    #expect(error.category == category)
    #expect(error.message.contains("\(status)"))
  }

  /// A status without a known reason ends the message at its number (it ended in a blank,
  /// shown in --json's message); 407 names the proxy and how to log in to it, not -u.
  @Test func statusWordsForUnknownReasonsAndTheProxy() {
    guard case .fail(let legal) = RangeResponse.decide(offset: 0, held: nil, response: Self.response(451)),
      case .retry(let odd, _) = RangeResponse.decide(offset: 0, held: nil, response: Self.response(599)),
      case .fail(let proxy) = RangeResponse.decide(offset: 0, held: nil, response: Self.response(407))
    else {
      Issue.record("451 and 407 fail, 599 retries")
      return
    }
    #expect(legal.message == "the server answered 451")
    #expect(odd.message == "the server answered 599")
    #expect(proxy.message == "the proxy answered 407 Proxy Authentication Required")
    #expect(proxy.category == .authentication)
    #expect(proxy.hint == LibraryWording.proxyLogin, "\(proxy.hint ?? "")")
    #expect(proxy.hint?.contains("http://USER:PASSWORD@") == true, "\(proxy.hint ?? "")")
  }

  @Test func ifRangePrefersAStrongETag() {
    #expect(Self.held.ifRangeValue == "\"a\"")
    #expect(ResourceIdentity(totalBytes: 1, etag: "W/\"a\"", lastModified: "date").ifRangeValue == "date")
    #expect(ResourceIdentity(totalBytes: 1, etag: nil, lastModified: nil).ifRangeValue == nil)
  }

  @Test func finishedFileChecks() {
    let recorded = Self.held
    #expect(
      FinishedFileCheck.compare(
        recorded: recorded, size: 1000, response: Self.response(416, range: "bytes */1000")) == .unchanged)
    #expect(
      FinishedFileCheck.compare(
        recorded: recorded, size: 1000, response: Self.response(416, range: "bytes */2000")) == .changed)
    // A server without ranges answers 200: the same version when the validators and size agree.
    #expect(
      FinishedFileCheck.compare(
        recorded: recorded, size: 1000, response: Self.response(200, length: 1000, etag: "\"a\""))
        == .unchanged)
    #expect(
      FinishedFileCheck.compare(
        recorded: recorded, size: 1000, response: Self.response(200, length: 1000, etag: "\"b\"")) == .changed
    )
    #expect(
      FinishedFileCheck.compare(
        recorded: recorded, size: 1000, response: Self.response(206, range: "bytes 1000-1999/2000"))
        == .changed)
    #expect(
      FinishedFileCheck.compare(recorded: recorded, size: 1000, response: Self.response(503)) == .undecided)
    // A server with no validator at all: the same size is all there is, and it agrees.
    let bare = ResourceIdentity(totalBytes: 1000, etag: nil, lastModified: nil)
    #expect(
      FinishedFileCheck.compare(
        recorded: bare, size: 1000, response: Self.response(200, length: 1000, etag: nil))
        == .unchanged)
    #expect(
      FinishedFileCheck.compare(
        recorded: bare, size: 1000, response: Self.response(200, length: 999, etag: nil))
        == .changed)
    #expect(
      FinishedFileCheck.compare(recorded: bare, size: 1000, response: Self.response(200, etag: nil))
        == .changed,
      "a size not said")
  }
}
