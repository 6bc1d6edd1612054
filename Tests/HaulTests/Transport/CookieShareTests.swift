import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// Transfers with the same cookie file and jar share one cookie store (`CurlCookieShares`).
@Suite struct CookieShareTests {
  static let etag = "\"cookies\""

  static func options(connections: Int, file: URL? = nil, jar: URL? = nil) -> DownloadOptions {
    var options = SegmentedDownloadTests.options(connections: connections)
    options.network.cookieFile = file?.path
    options.network.cookieJar = jar?.path
    return options
  }

  /// A cookie the first response sets goes out on the download's range requests, which run on
  /// other connections (each its own libcurl handle), and the jar holds it.
  @Test func connectionsOfOneDownloadShareCookies() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1_000_000, seed: 91)
    var resource = TestResource(body: body, etag: Self.etag, faults: TestFaults(bytesPerSecond: 2_000_000))
    resource.extraHeaders = [("Set-Cookie", "session=abc123; Path=/")]
    server.setResource("/f", resource)
    let directory = try TemporaryDirectory()
    let jar = directory.file("jar.txt")
    let outcome = try await SegmentedDownloadTests.run(
      server.url("/f"), to: directory.file("f"), options: Self.options(connections: 4, jar: jar))
    #expect(outcome.error == nil)
    #expect(DownloadTests.holds(directory.file("f"), body), "file bytes differ")
    let requests = server.requests(for: "/f")
    let ranged = requests.filter { $0.header("Range") != nil }
    #expect(!ranged.isEmpty, "the download did not split")
    #expect(requests.first?.header("Cookie") == nil)
    for request in ranged {
      #expect(request.header("Cookie") == "session=abc123", "\(request.headers)")
    }
    let saved = (try? String(contentsOf: jar, encoding: .utf8)) ?? ""
    #expect(saved.contains("session\tabc123"), "jar: \(saved)")
  }

  /// Later downloads of the same configuration send what earlier ones received, and the cookie
  /// file is loaded again only when it changed: a new value in it wins.
  @Test func laterDownloadsShareTheStoreAndSeeTheFileChange() async throws {
    let server = try TestServer()
    let first = TestResource.random(size: 20_000, seed: 92)
    var setting = TestResource(body: first, etag: Self.etag)
    setting.extraHeaders = [("Set-Cookie", "session=s1; Path=/")]
    server.setResource("/a", setting)
    let second = TestResource.random(size: 20_000, seed: 93)
    server.setResource("/b", TestResource(body: second, etag: Self.etag))
    server.setResource("/c", TestResource(body: second, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("cookies.txt")
    func writeCookie(_ value: String) throws {
      try Data("127.0.0.1\tFALSE\t/\tFALSE\t0\ttheme\t\(value)\n".utf8).write(to: file)
    }
    try writeCookie("dark")
    let options = Self.options(connections: 1, file: file)

    let a = try await DownloadTests.run(server.url("/a"), to: .file(directory.file("a")), options: options)
    #expect(a.error == nil)
    #expect(server.requests(for: "/a").last?.header("Cookie") == "theme=dark")

    let b = try await DownloadTests.run(server.url("/b"), to: .file(directory.file("b")), options: options)
    #expect(b.error == nil)
    let sentB = server.requests(for: "/b").last?.header("Cookie") ?? ""
    #expect(sentB.contains("theme=dark") && sentB.contains("session=s1"), "\(sentB)")

    try writeCookie("light")
    let c = try await DownloadTests.run(server.url("/c"), to: .file(directory.file("c")), options: options)
    #expect(c.error == nil)
    let sentC = server.requests(for: "/c").last?.header("Cookie") ?? ""
    #expect(sentC.contains("theme=light") && sentC.contains("session=s1"), "\(sentC)")
  }

  /// `-b F -c F`, the usual way to keep a session: each download sends the value the one before
  /// it received.
  @Test func aJarThatIsAlsoTheCookieFileKeepsTheSession() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 20_000, seed: 94)
    for (path, value) in [("/1", "v1"), ("/2", "v2"), ("/3", nil)] {
      var resource = TestResource(body: body, etag: Self.etag)
      if let value { resource.extraHeaders = [("Set-Cookie", "token=\(value); Path=/")] }
      server.setResource(path, resource)
    }
    let directory = try TemporaryDirectory()
    let jar = directory.file("jar.txt")
    let options = Self.options(connections: 1, file: jar, jar: jar)
    for path in ["/1", "/2", "/3"] {
      let outcome = try await DownloadTests.run(
        server.url(path), to: .file(directory.file(String(path.dropFirst()))), options: options)
      #expect(outcome.error == nil)
    }
    #expect(server.requests(for: "/2").last?.header("Cookie") == "token=v1")
    #expect(server.requests(for: "/3").last?.header("Cookie") == "token=v2")
  }

  /// The cookie file is loaded first, then only after it changed; a change that is the store's
  /// own jar being written (`-b F -c F`) is not loaded back, since a Set-Cookie received after
  /// that write would be overwritten by the older value.
  @Test func whenTheCookieFileIsLoaded() throws {
    let directory = try TemporaryDirectory()
    let file = directory.file("cookies.txt")
    let path = file.path
    let separate = try #require(CurlCookieShare(file: path, jar: directory.file("jar").path))
    #expect(separate.fileToLoad() == path, "first use, even of a missing file")
    #expect(separate.fileToLoad() == nil)
    try Data("a\n".utf8).write(to: file)
    #expect(separate.fileToLoad() == path, "created")
    #expect(separate.fileToLoad() == nil)
    try Data("ab\n".utf8).write(to: file)
    separate.jarWritten()
    #expect(separate.fileToLoad() == path, "changed by someone else: its jar is another file")

    let same = try #require(CurlCookieShare(file: path, jar: path))
    #expect(same.fileToLoad() == path)
    try Data("abc\n".utf8).write(to: file)
    same.jarWritten()
    #expect(same.fileToLoad() == nil, "its own jar")
    try Data("abcd\n".utf8).write(to: file)
    #expect(same.fileToLoad() == path, "changed by someone else")

    let jarOnly = try #require(CurlCookieShare(file: nil, jar: path))
    #expect(jarOnly.fileToLoad() == nil, "a jar alone is never read")
  }

  /// Stores nobody used for their lifetime are freed; one in use never is.
  @Test func idleStoresAreFreed() throws {
    let shares = CurlCookieShares()
    var network = NetworkOptions()
    #expect(shares.share(for: network) == nil, "no file and no jar: no cookie engine")
    network.cookieJar = "/nonexistent/jar"
    let share = try #require(shares.share(for: network))
    #expect(shares.share(for: network) === share)
    share.attach()
    let later = Monotonic.now() + CurlCookieShares.idleLifetime + 1
    shares.sweep(now: later)
    #expect(shares.share(for: network) === share, "in use")
    share.detach()
    #expect(!share.isIdle(since: Monotonic.now(), for: CurlCookieShares.idleLifetime))
    shares.sweep(now: Monotonic.now() + CurlCookieShares.idleLifetime + 1)
    #expect(shares.share(for: network) !== share, "freed after its lifetime")
  }
}
