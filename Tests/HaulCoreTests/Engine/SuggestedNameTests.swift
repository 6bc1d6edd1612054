import Testing

@testable import HaulCore

/// The name a directory download's response gives its file, with and without a fallback for
/// the URL's own name (`DownloadOptions.fallbackFileName`, `--auto-rename`).
@Suite struct SuggestedNameTests {
  typealias Row = (disposition: String?, finalURL: String, fallback: String?, expected: String)

  static let request = "http://h/download?id=2"
  static let rows: [Row] = [
    // The server's name wins over the fallback.
    ("attachment; filename=\"file2.bin\"", request, "download.1", "file2.bin"),
    ("attachment; filename=\"file2.bin\"", request, nil, "file2.bin"),
    // No name from the server: the fallback replaces the URL's.
    (nil, request, "download.1", "download.1"),
    (nil, request, nil, "download"),
    // A redirect that keeps the name changes nothing; one to another name gives that name.
    (nil, "http://mirror/download?sig=x", "download.1", "download.1"),
    (nil, "http://mirror/files/app-1.2.tar.gz", "download.1", "app-1.2.tar.gz"),
    (nil, "http://mirror/files/app-1.2.tar.gz", nil, "app-1.2.tar.gz"),
    // A header that names nothing usable is no name from the server.
    ("attachment; filename=\"..\"", request, "download.1", "download.1"),
  ]

  @Test(arguments: rows.indices)
  func nameFromTheResponse(_ index: Int) {
    let row = Self.rows[index]
    var headers = HTTPHeaders()
    if let disposition = row.disposition { headers.add(name: "Content-Disposition", value: disposition) }
    let head = ResponseHead(status: 200, headers: headers, finalURL: row.finalURL)
    #expect(
      ResponseFacts.suggestedName(head, requestURL: Self.request, fallback: row.fallback) == row.expected)
  }

  @Test func aURLWithoutANameFallsBackTooElseGetsIndexHTML() {
    let head = ResponseHead(status: 200, headers: HTTPHeaders(), finalURL: "http://h/")
    #expect(
      ResponseFacts.suggestedName(head, requestURL: "http://h/", fallback: "index.1.html") == "index.1.html")
    #expect(ResponseFacts.suggestedName(head, requestURL: "http://h/") == "index.html")
  }
}
