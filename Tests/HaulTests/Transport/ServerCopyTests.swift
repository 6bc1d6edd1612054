import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// `ServerCopy.compare`, the question `haul -N` asks: newer, not newer, or, when the server
/// gives no modification time, unknown (not "newer", which let -N replace a file it could
/// not compare).
@Suite struct ServerCopyTests {
  static let modified = "Tue, 14 Nov 2023 22:13:20 GMT"  // 1_700_000_000

  @Test func comparesByTheServersTime() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 10_000, seed: 210)
    server.setResource("/dated", TestResource(body: body, etag: "\"d\"", lastModified: Self.modified))
    server.setResource("/undated", TestResource(body: body, etag: "\"u\""))
    let before = Date(timeIntervalSince1970: 1_600_000_000)
    let after = Date(timeIntervalSince1970: 1_800_000_000)

    #expect(try await ServerCopy.compare(server.url("/dated"), with: before) == .newer)
    // The test server ignores If-Modified-Since: libcurl compares Last-Modified itself.
    #expect(try await ServerCopy.compare(server.url("/dated"), with: after) == .notNewer)
    #expect(try await ServerCopy.compare(server.url("/undated"), with: after) == .unknown)
    #expect(try await ServerCopy.compare(server.url("/undated"), with: before) == .unknown)
    // Not the file: the download that follows reports the error.
    #expect(try await ServerCopy.compare(server.url("/missing"), with: after) == .newer)
    // isNewer keeps its answer: only a copy known not to be newer is not.
    #expect(try await ServerCopy.isNewer(server.url("/undated"), than: after))
    #expect(try await !ServerCopy.isNewer(server.url("/dated"), than: after))
  }

  @Test(
    arguments: [
      (304, nil, ServerCopy.Comparison.notNewer), (200, nil, .unknown), (206, nil, .unknown),
      (200, "not a date", .unknown), (200, modified, .newer), (404, nil, .newer), (500, nil, .newer),
    ] as [(Int, String?, ServerCopy.Comparison)])
  func headsSayWhatTheyCan(status: Int, lastModified: String?, comparison: ServerCopy.Comparison) {
    var headers = HTTPHeaders()
    if let lastModified { headers.add(name: "Last-Modified", value: lastModified) }
    let head = ResponseHead(status: status, headers: headers, finalURL: "http://h/f")
    #expect(ServerCopy.comparison(head) == comparison)
  }

  /// A file haul finished from the URL is its download; from another URL, or a file of
  /// someone else, is not.
  @Test func finishedDownloadsAreKnownByTheirURL() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 1000, seed: 211), etag: "\"f\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(file))
    try #require(outcome.value != nil, "\(String(describing: outcome.error))")
    #expect(ServerCopy.isFinishedDownload(at: file.path, of: server.url("/f")))
    #expect(!ServerCopy.isFinishedDownload(at: file.path, of: server.url("/g")))
    try Data("mine".utf8).write(to: directory.file("mine"))
    #expect(!ServerCopy.isFinishedDownload(at: directory.file("mine").path, of: server.url("/f")))
    #expect(!ServerCopy.isFinishedDownload(at: directory.file("absent").path, of: server.url("/f")))
  }
}
