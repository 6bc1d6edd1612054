import Testing

@testable import HaulCore

/// The one "same representation" rule, as a table: sizes first, then ETags, then dates.
@Suite struct RepresentationTests {
  typealias Verdict = Representation.Verdict

  static func id(_ total: Int64?, _ etag: String?, _ date: String?) -> ResourceIdentity {
    ResourceIdentity(totalBytes: total, etag: etag, lastModified: date)
  }

  static let monday = "Mon, 01 Jan 2024 00:00:00 GMT"
  static let tuesday = "Tue, 02 Jan 2024 00:00:00 GMT"

  static let cases: [(held: ResourceIdentity, other: ResourceIdentity, verdict: Verdict, sameOrSize: Bool)] =
    [
      // Sizes that differ decide first, whatever the validators say.
      (
        id(10, "\"a\"", monday), id(11, "\"a\"", monday),
        .different("the file on the server changed size (10 → 11 bytes)"), false
      ),
      // ETags decide when both have one, even if dates differ.
      (id(10, "\"a\"", monday), id(10, "\"a\"", tuesday), .same, true),
      (
        id(10, "\"a\"", monday), id(10, "\"b\"", monday),
        .different("the file on the server changed (ETag \"a\" → \"b\")"), false
      ),
      // A weak and a strong tag are different strings: not the same.
      (
        id(10, "W/\"a\"", nil), id(10, "\"a\"", nil),
        .different("the file on the server changed (ETag W/\"a\" → \"a\")"), false
      ),
      // Without an ETag on one side the dates decide.
      (id(10, "\"a\"", monday), id(10, nil, monday), .same, true),
      (
        id(10, nil, monday), id(10, nil, tuesday),
        .different("the file on the server changed (Last-Modified \(monday) → \(tuesday))"), false
      ),
      // Unknown sizes do not differ.
      (id(nil, "\"a\"", nil), id(10, "\"a\"", nil), .same, true),
      // No validator in common: unknown; equal known sizes may stand in, unknown ones may not.
      (id(10, nil, nil), id(10, nil, nil), .unknown, true),
      (id(10, "\"a\"", nil), id(10, nil, monday), .unknown, true),
      (id(nil, nil, nil), id(10, nil, nil), .unknown, false),
      (id(nil, nil, nil), id(nil, nil, nil), .unknown, false),
    ]

  @Test(arguments: 0..<cases.count)
  func verdict(_ index: Int) {
    let row = Self.cases[index]
    #expect(Representation.compare(row.held, row.other) == row.verdict)
    #expect(Representation.isSameOrSameSize(row.held, row.other) == row.sameOrSize)
  }

  /// The three places that used to have rules of their own now agree with the table.
  @Test func rangeResponsesAndFinishedFilesFollowTheRule() {
    let held = Self.id(100, "\"a\"", Self.monday)
    // A 206 with the same tag but another date is appended (the tag decides).
    let sameTag = ResponseSummary(
      status: 206, contentRange: .range(first: 40, last: 99, total: 100), contentLength: 60, etag: "\"a\"",
      lastModified: Self.tuesday)
    #expect(RangeResponse.decide(offset: 40, held: held, response: sameTag) == .append(at: 40))
    // Held with a tag, the response without one but with another date: the date decides.
    let otherDate = ResponseSummary(
      status: 206, contentRange: .range(first: 40, last: 99, total: 100), contentLength: 60,
      lastModified: Self.tuesday)
    if case .restart = RangeResponse.decide(offset: 40, held: held, response: otherDate) {
    } else {
      Issue.record("a changed Last-Modified was appended")
    }
    // A finished file: a 200 of the same size and tag is unchanged; with no validator on either
    // side the same size is all there is, and nothing says it changed (wget -c's rule too).
    let whole = ResponseSummary(status: 200, contentLength: 100, etag: "\"a\"")
    let otherDateWhole = ResponseSummary(status: 200, contentLength: 100, lastModified: Self.tuesday)
    #expect(FinishedFileCheck.compare(recorded: held, size: 100, response: whole) == .unchanged)
    let bare = ResponseSummary(status: 200, contentLength: 100)
    #expect(
      FinishedFileCheck.compare(recorded: Self.id(100, nil, nil), size: 100, response: bare) == .unchanged)
    #expect(FinishedFileCheck.compare(recorded: held, size: 100, response: otherDateWhole) == .changed)
  }
}
