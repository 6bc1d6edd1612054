import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// What a hostile server (or a hostile link) must not be able to make Haul do: write outside
/// the chosen directory, leak credentials to another host, or skip certificate checks.
@Suite struct SecurityTests {
  // MARK: - File names from the server and the URL stay inside the directory

  /// A Content-Disposition value and the name the file must get.
  static let dispositionCases: [(header: String, expected: String)] = [
    ("attachment; filename=\"/etc/passwd\"", "passwd"),
    ("attachment; filename=\"../../evil.sh\"", "evil.sh"),
    ("attachment; filename*=UTF-8''..%2F..%2Fevil.sh", "evil.sh"),
    ("attachment; filename*=UTF-8''%2e%2e%2f%2e%2e%2fevil.sh", "evil.sh"),
    ("attachment; filename=\"..\\\\..\\\\evil.bat\"", "evil.bat"),
    ("attachment; filename=..\\..\\evil.bat", "evil.bat"),
    ("attachment; filename*=UTF-8''a%00b.txt", "ab.txt"),
    ("attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe", "invoicefdp.exe"),
    ("attachment; filename*=UTF-8''%E2%80%8B%EF%BB%BFhidden%E2%81%A6.txt", "hidden.txt"),
    ("attachment; filename=\"line\\r\\nbreak.txt\"", "linernbreak.txt"),
    ("attachment; filename*=UTF-8''line%0D%0Abreak.txt", "linebreak.txt"),
    ("attachment; filename=\"x.haul\"", "x.haul-file"),
    ("attachment; filename=\"x.PART\"", "x.PART-file"),
    ("attachment; filename=\".haul\"", "haul"),
    ("attachment; filename=\".part\"", "part"),
    // Never a hidden file (a login script in $HOME): leading dots go.
    ("attachment; filename=\".bash_profile\"", "bash_profile"),
    ("attachment; filename*=UTF-8''%2E%2Essh", "ssh"),
    // Nothing usable: the URL's own name is used.
    ("attachment; filename=\"..\"", "file.bin"),
    ("attachment; filename=\".\"", "file.bin"),
    ("attachment; filename=\"...\"", "file.bin"),
    ("attachment; filename=\"/\"", "file.bin"),
    ("attachment; filename*=UTF-8''%2F%00%E2%80%AE", "file.bin"),
  ]

  @Test(arguments: 0..<dispositionCases.count)
  func contentDispositionNamesStayInside(_ index: Int) async throws {
    let (header, expected) = Self.dispositionCases[index]
    let server = try TestServer()
    let body = TestResource.random(size: 1_000, seed: UInt64(index))
    server.setResource("/dir/file.bin", TestResource(body: body, contentDisposition: header))
    let root = try TemporaryDirectory()
    let inside = try Self.makeDirectory("inside", in: root)
    let outcome = try await DownloadTests.run(server.url("/dir/file.bin"), to: .directory(inside))
    let result = try #require(outcome.value, "\(header): \(String(describing: outcome.error))")
    #expect(result.file.lastPathComponent == expected, "\(header)")
    try Self.expectOnlyFile(expected, with: body, in: inside, root: root)
  }

  @Test func veryLongNameIsShortenedInside() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1_000, seed: 7)
    let long = String(repeating: "é", count: 400) + ".tar.gz"
    server.setResource("/f", TestResource(body: body, contentDisposition: "attachment; filename=\"\(long)\""))
    let root = try TemporaryDirectory()
    let inside = try Self.makeDirectory("inside", in: root)
    let outcome = try await DownloadTests.run(server.url("/f"), to: .directory(inside))
    let result = try #require(outcome.value, "\(String(describing: outcome.error))")
    let name = result.file.lastPathComponent
    // Room is left for NAME.haul.tmp (regression: a 255-byte name failed with ENAMETOOLONG).
    #expect(name.utf8.count + ".haul.tmp".utf8.count <= 255)
    #expect(name.hasSuffix(".gz"))
    #expect(name.hasPrefix("ééé"))
    try Self.expectOnlyFile(name, with: body, in: inside, root: root)
  }

  /// URL paths whose last segment decodes to something dangerous.
  static let urlCases: [(path: String, expected: String)] = [
    ("/d/%2e%2e%2f%2e%2e%2fevil.sh", "evil.sh"),
    ("/d/..%2F..%2Fevil.sh", "evil.sh"),
    ("/d/..%5C..%5Cevil.bat", "evil.bat"),
    ("/d/a%00b.txt", "ab.txt"),
    ("/d/%E2%80%AEgpj.exe", "gpj.exe"),
    ("/d/%2e%2e", "index.html"),
    ("/d/name.haul", "name.haul-file"),
    ("/d/name.part", "name.part-file"),
  ]

  @Test(arguments: 0..<urlCases.count)
  func urlNamesStayInside(_ index: Int) async throws {
    let (path, expected) = Self.urlCases[index]
    let server = try TestServer()
    let body = TestResource.random(size: 500, seed: UInt64(100 + index))
    server.setResource(path, TestResource(body: body))
    let root = try TemporaryDirectory()
    let inside = try Self.makeDirectory("inside", in: root)
    let outcome = try await DownloadTests.run(server.url(path), to: .directory(inside))
    let result = try #require(outcome.value, "\(path): \(String(describing: outcome.error))")
    #expect(result.file.lastPathComponent == expected, "\(path)")
    #expect(server.requests.map(\.path) == [path], "the request target is sent as given")
    try Self.expectOnlyFile(expected, with: body, in: inside, root: root)
  }

  @Test func suggestedNameNeverReplacesAnotherFile() async throws {
    let server = try TestServer()
    server.setResource(
      "/f", TestResource(body: Array("new".utf8), contentDisposition: "attachment; filename=\"victim.txt\""))
    let directory = try TemporaryDirectory()
    let victim = directory.file("victim.txt")
    try Data("precious".utf8).write(to: victim)
    let outcome = try await DownloadTests.run(server.url("/f"), to: .directory(directory.url))
    #expect(outcome.error?.category == .fileSystem)
    #expect(DownloadTests.bytes(victim) == Array("precious".utf8))
  }

  // MARK: - Credentials are not forwarded to another host

  @Test func authorizationHeaderIsNotSentToAnotherHost() async throws {
    let (first, second) = (try TestServer(), try TestServer())
    let body = TestResource.random(size: 2_000, seed: 11)
    second.setResource("/file.bin", TestResource(body: body))
    first.setRedirect("/start", to: "http://localhost:\(second.port)/file.bin")
    var options = DownloadTests.fastOptions()
    options.headers = [("Authorization", "Bearer top-secret"), ("Cookie", "session=top-secret")]
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(
      first.url("/start"), to: .file(directory.file("f")), options: options)
    #expect(outcome.error == nil)
    #expect(DownloadTests.bytes(directory.file("f")) == body)
    #expect(first.requests(for: "/start").first?.header("Authorization") == "Bearer top-secret")
    let forwarded = second.requests(for: "/file.bin")
    #expect(forwarded.count == 1)
    // libcurl (7.58+, with the port rule since 7.83) drops custom Authorization and Cookie
    // headers when a redirect goes to another host or port, unless CURLOPT_UNRESTRICTED_AUTH.
    #expect(forwarded.allSatisfy { $0.header("Authorization") == nil }, "\(forwarded.map(\.headers))")
    #expect(forwarded.allSatisfy { $0.header("Cookie") == nil }, "\(forwarded.map(\.headers))")
  }

  @Test func urlCredentialsAreNotSentToAnotherHost() async throws {
    let (first, second) = (try TestServer(), try TestServer())
    let body = TestResource.random(size: 2_000, seed: 12)
    second.setResource("/file.bin", TestResource(body: body))
    first.setRedirect("/start", to: "http://localhost:\(second.port)/file.bin")
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(
      "http://user:pa55@127.0.0.1:\(first.port)/start", to: .file(directory.file("f")))
    #expect(outcome.error == nil)
    #expect(DownloadTests.bytes(directory.file("f")) == body)
    // "user:pa55" in Basic form.
    #expect(first.requests(for: "/start").first?.header("Authorization") == "Basic dXNlcjpwYTU1")
    #expect(second.requests(for: "/file.bin").allSatisfy { $0.header("Authorization") == nil })
  }

  @Test func sameHostRedirectKeepsCredentials() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000, seed: 13)
    server.setResource("/file.bin", TestResource(body: body))
    server.setRedirect("/start", to: "/file.bin")
    var options = DownloadTests.fastOptions()
    options.headers = [("Authorization", "Bearer top-secret")]
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(
      server.url("/start"), to: .file(directory.file("f")), options: options)
    #expect(outcome.error == nil)
    // Same scheme, host and port: libcurl keeps the header, as a browser keeps a session.
    #expect(server.requests(for: "/file.bin").first?.header("Authorization") == "Bearer top-secret")
  }

  /// A password in the URL never reaches the sidecar state file (`NAME.haul`) nor the finished
  /// file's `user.haul.state` attribute: state records the URL without it, and a rerun with the
  /// same URL still finds and resumes the partial.
  @Test func urlPasswordIsNotWrittenToTheStateFile() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 14)
    server.setResource(
      "/f", TestResource(body: body, etag: "\"v1\"", faults: TestFaults(dropAfterBytes: 50_000, dropTimes: 1))
    )
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var options = DownloadTests.fastOptions()
    options.maxAttemptsWithoutProgress = 1
    let outcome = try await DownloadTests.run(
      "http://user:pa55word@127.0.0.1:\(server.port)/f", to: .file(file), options: options)
    #expect(outcome.error?.category == .network)
    let state = try #require(DownloadTests.bytes(URL(fileURLWithPath: file.path + ".haul")))
    #expect(!String(decoding: state, as: UTF8.self).contains("pa55word"))
    #expect(String(decoding: state, as: UTF8.self).contains("user@127.0.0.1"))
    let resumed = try await DownloadTests.run(
      "http://user:pa55word@127.0.0.1:\(server.port)/f", to: .file(file))
    #expect(resumed.value?.resumedFrom == 50_000)
    let same = DownloadTests.holds(file, body)
    #expect(same)
  }

  // MARK: - TLS

  @Test func tlsVerificationIsOnByDefault() {
    #expect(DownloadOptions().verifyTLS)
  }

  // MARK: - Helpers

  static func makeDirectory(_ name: String, in root: TemporaryDirectory) throws -> URL {
    let url = root.file(name)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    return url
  }

  /// `directory` holds exactly `name` with `body` (no `.part` or `.haul` left) and nothing
  /// else appeared next to it in `root`.
  static func expectOnlyFile(
    _ name: String, with body: [UInt8], in directory: URL, root: TemporaryDirectory,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    #expect(names == [name], sourceLocation: sourceLocation)
    #expect(
      DownloadTests.bytes(directory.appendingPathComponent(name)) == body, sourceLocation: sourceLocation)
    let outside = try FileManager.default.contentsOfDirectory(atPath: root.url.path)
    #expect(outside == [directory.lastPathComponent], sourceLocation: sourceLocation)
  }
}
