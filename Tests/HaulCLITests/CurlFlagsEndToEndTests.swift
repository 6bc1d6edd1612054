import Foundation
import HaulTestSupport
import Testing

/// The curl/wget options end to end: the built `haul` against the loopback TestServer, which
/// records what each request carried.
@Suite("curl flags end to end", .timeLimit(.minutes(2)))
struct CurlFlagsEndToEndTests {
  static func haul(_ arguments: [String], environment: [String: String]? = nil) async throws -> ProcessOutcome
  {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    return try await ChildProcess.start(binary, arguments, environment: environment).wait()
  }

  static func serve(_ server: TestServer, _ path: String, size: Int = 100_000, seed: UInt64) -> [UInt8] {
    let body = TestResource.random(size: size, seed: seed)
    server.setResource(path, TestResource(body: body, etag: "\"v\(seed)\""))
    return body
  }

  /// `-u user:password` is HTTP Basic through libcurl; the password reaches neither the state
  /// file nor the output. `-u user` takes it from HAUL_PASSWORD.
  @Test func userAndPassword() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 61)
    let expected = "Basic " + Data("joe:s3cret-pw".utf8).base64EncodedString()
    server.setResource(
      "/private.bin",
      TestResource(
        body: body, etag: "\"p\"",
        faults: TestFaults(stallAfterBytes: 100_000, stallTimes: 1, requireAuthorization: expected)))
    let directory = try TemporaryDirectory()
    let target = directory.file("private.bin").path

    let refused = try await Self.haul(["-q", "-o", target, server.url("/private.bin")])
    #expect(refused.status == 6, "\(refused)")

    // The first attempt stalls half way, so a state file exists while the password is in use.
    let given = try await Self.haul([
      "--json", "--timeout", "1", "-u", "joe:s3cret-pw", "-o", target, server.url("/private.bin"),
    ])
    #expect(given.status == 0, "\(given)")
    expectBytes(directory.contents("private.bin"), equal: body)
    #expect(!given.stdout.contains("s3cret") && !given.stderr.contains("s3cret"))
    #expect(server.requests(for: "/private.bin").last?.header("Authorization") == expected)
    #expect(server.requests(for: "/private.bin").last?.header("Range") != nil, "it resumed")

    try FileManager.default.removeItem(atPath: target)
    let fromEnvironment = try await Self.haul(
      ["-q", "-u", "joe", "-o", target, server.url("/private.bin")],
      environment: ["HAUL_PASSWORD": "s3cret-pw"])
    #expect(fromEnvironment.status == 0, "\(fromEnvironment)")
    expectBytes(directory.contents("private.bin"), equal: body)
  }

  /// A wrong password on a resume is a refused login (exit 6), not an expired link: no advice
  /// to find a fresh URL, and the partial stays for the right password.
  @Test func aWrongPasswordOnAResumeIsARefusedLogin() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 64)
    let expected = "Basic " + Data("joe:right".utf8).base64EncodedString()
    server.setResource(
      "/p.bin",
      TestResource(
        body: body, etag: "\"p\"",
        faults: TestFaults(dropAfterBytes: 100_000, dropTimes: 1, requireAuthorization: expected)))
    let directory = try TemporaryDirectory()
    let target = directory.file("p.bin").path
    let cut = try await Self.haul([
      "-q", "--retries", "0", "-u", "joe:right", "-o", target, server.url("/p.bin"),
    ])
    #expect(cut.status == 4, "\(cut)")
    let wrong = try await Self.haul(["-u", "joe:wrong", "-o", target, server.url("/p.bin")])
    #expect(wrong.status == 6, "\(wrong)")
    #expect(!wrong.stderr.contains("expired") && !wrong.stderr.contains("fresh URL"), "\(wrong.stderr)")
    let right = try await Self.haul(["-q", "-u", "joe:right", "-o", target, server.url("/p.bin")])
    #expect(right.status == 0, "\(right)")
    expectBytes(directory.contents("p.bin"), equal: body)
  }

  /// `--netrc-file`: the login for the URL's host comes from the file.
  @Test func netrcFile() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 50_000, seed: 62)
    let expected = "Basic " + Data("ann:netrc-pw".utf8).base64EncodedString()
    server.setResource(
      "/n.bin", TestResource(body: body, faults: TestFaults(requireAuthorization: expected)))
    let directory = try TemporaryDirectory()
    try Data("machine 127.0.0.1 login ann password netrc-pw\n".utf8).write(to: directory.file("netrc"))
    let outcome = try await Self.haul([
      "-q", "--netrc-file", directory.file("netrc").path, "-o", directory.file("n.bin").path,
      server.url("/n.bin"),
    ])
    #expect(outcome.status == 0, "\(outcome)")
    expectBytes(directory.contents("n.bin"), equal: body)
  }

  /// `-A`, `-e` and `-b NAME=VALUE` go out on every request; `-c` writes the cookies the server set.
  @Test func userAgentRefererAndCookies() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 50_000, seed: 63)
    var resource = TestResource(body: body, etag: "\"c\"")
    resource.extraHeaders = [("Set-Cookie", "session=abc123; Path=/")]
    server.setResource("/c.bin", resource)
    let directory = try TemporaryDirectory()
    let jar = directory.file("jar.txt")
    let outcome = try await Self.haul([
      "-q", "-A", "agent/9", "-e", "https://ref.example/page", "-b", "theme=dark", "-c", jar.path,
      "-o", directory.file("c.bin").path, server.url("/c.bin"),
    ])
    #expect(outcome.status == 0, "\(outcome)")
    let request = try #require(server.requests(for: "/c.bin").last)
    #expect(request.header("User-Agent") == "agent/9")
    #expect(request.header("Referer") == "https://ref.example/page")
    #expect(request.header("Cookie") == "theme=dark")
    let saved = (try? String(contentsOf: jar, encoding: .utf8)) ?? ""
    #expect(saved.contains("session") && saved.contains("abc123"), "cookie jar: \(saved)")

    // The jar is a cookie file for the next run.
    let again = try await Self.haul([
      "-q", "--overwrite", "-b", jar.path, "-o", directory.file("c.bin").path, server.url("/c.bin"),
    ])
    #expect(again.status == 0, "\(again)")
    #expect(server.requests(for: "/c.bin").last?.header("Cookie")?.contains("session=abc123") == true)
  }

  /// `--resolve` reaches a name no resolver knows; `--proxy` sends the request to the proxy (the
  /// TestServer, which sees the absolute URL); `--noproxy` bypasses a dead proxy.
  @Test func resolveProxyAndNoProxy() async throws {
    let server = try TestServer()
    let body = Self.serve(server, "/r.bin", seed: 64)
    let directory = try TemporaryDirectory()
    let resolved = try await Self.haul([
      "-q", "--resolve", "haul-test.invalid:\(server.port):127.0.0.1", "-o", directory.file("r.bin").path,
      "http://haul-test.invalid:\(server.port)/r.bin",
    ])
    #expect(resolved.status == 0, "\(resolved)")
    expectBytes(directory.contents("r.bin"), equal: body)
    #expect(server.requests(for: "/r.bin").last?.header("Host") == "haul-test.invalid:\(server.port)")

    let proxied = TestResource.random(size: 30_000, seed: 65)
    server.setResource("http://far-away.invalid/p.bin", TestResource(body: proxied, etag: "\"p\""))
    let viaProxy = try await Self.haul([
      "-q", "--proxy", "http://127.0.0.1:\(server.port)", "-o", directory.file("p.bin").path,
      "http://far-away.invalid/p.bin",
    ])
    #expect(viaProxy.status == 0, "\(viaProxy)")
    expectBytes(directory.contents("p.bin"), equal: proxied)

    // A proxy where nothing listens (port 1: no test binds it).
    let direct = try await Self.haul(
      [
        "-q", "--retries", "0", "--noproxy", "127.0.0.1", "-o", directory.file("d.bin").path,
        server.url("/r.bin"),
      ], environment: ["http_proxy": "http://127.0.0.1:1"])
    #expect(direct.status == 0, "\(direct)")
    expectBytes(directory.contents("d.bin"), equal: body)
  }

  /// `-4` connects to an IPv4 address; `-6` cannot use one and fails at once, as a name that
  /// does not resolve.
  @Test func ipVersions() async throws {
    let server = try TestServer()
    let body = Self.serve(server, "/v.bin", seed: 66)
    let directory = try TemporaryDirectory()
    let v4 = try await Self.haul(["-q", "-4", "-o", directory.file("v.bin").path, server.url("/v.bin")])
    #expect(v4.status == 0, "\(v4)")
    expectBytes(directory.contents("v.bin"), equal: body)
    let v6 = try await Self.haul(["-q", "-6", "-o", directory.file("w.bin").path, server.url("/v.bin")])
    #expect(v6.status == 4, "\(v6)")
    #expect(!directory.exists("w.bin") && !directory.exists("w.bin.part"))
  }

  /// An https:// URL whose port speaks plain HTTP: the handshake fails, which is no certificate
  /// problem: exit 4, and no hint blames the certificate or offers --insecure (given or not).
  @Test func aPortThatDoesNotSpeakTLS() async throws {
    let server = try TestServer()
    _ = Self.serve(server, "/x.bin", seed: 90)
    let url = "https://127.0.0.1:\(server.port)/x.bin"
    let directory = try TemporaryDirectory()
    for insecure in [[], ["--insecure"]] {
      let outcome = try await Self.haul(insecure + ["-o", directory.file("x.bin").path, url])
      #expect(outcome.status == 4, "\(outcome)")
      #expect(outcome.stderr.contains("TLS handshake failed"), "\(outcome)")
      #expect(outcome.stderr.contains("is it a TLS server on that port?"), "\(outcome)")
      #expect(!outcome.stderr.contains("could not be verified"), "\(outcome)")
      #expect(!outcome.stderr.contains("skips the check"), "\(outcome)")
    }
    #expect(!directory.exists("x.bin") && !directory.exists("x.bin.part"))
  }

  /// `--max-redirs 0` refuses the first redirect; the default follows it.
  @Test func maxRedirects() async throws {
    let server = try TestServer()
    let body = Self.serve(server, "/target.bin", seed: 67)
    server.setRedirect("/moved.bin", to: server.url("/target.bin"))
    let directory = try TemporaryDirectory()
    let refused = try await Self.haul([
      "-q", "--max-redirs", "0", "-o", directory.file("t.bin").path, server.url("/moved.bin"),
    ])
    #expect(refused.status == 7, "\(refused)")
    #expect(refused.stderr.contains("too many redirects"), "\(refused)")
    #expect(server.requests(for: "/target.bin").isEmpty)
    let followed = try await Self.haul([
      "-q", "--max-redirs", "1", "-o", directory.file("t.bin").path, server.url("/moved.bin"),
    ])
    #expect(followed.status == 0, "\(followed)")
    expectBytes(directory.contents("t.bin"), equal: body)
  }

  /// `--max-filesize`: a larger file fails before any byte is written (exit 4, saying both sizes)
  /// and leaves nothing behind. When the server does not say the size in advance (chunked), the
  /// bytes up to the limit are kept, as curl keeps them, and a run without it resumes; so is a
  /// partial of an earlier run that a rerun with the limit refuses.
  @Test func maxFileSize() async throws {
    let server = try TestServer()
    let big = Self.serve(server, "/big.bin", size: 300_000, seed: 68)
    let chunked = TestResource.random(size: 300_000, seed: 69)
    server.setResource("/chunked.bin", TestResource(body: chunked, faults: TestFaults(chunked: true)))
    let directory = try TemporaryDirectory()
    let refused = try await Self.haul([
      "--max-filesize", "100K", "-o", directory.file("big.bin").path, server.url("/big.bin"),
    ])
    #expect(refused.status == 4, "\(refused)")
    #expect(refused.stderr.contains("more than the largest file size accepted (100 KiB)"), "\(refused)")
    #expect(server.requests(for: "/big.bin").count == 1, "no retries: \(server.requests(for: "/big.bin"))")
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)

    let stopped = try await Self.haul([
      "--max-filesize", "100K", "-o", directory.file("chunked.bin").path, server.url("/chunked.bin"),
    ])
    #expect(stopped.status == 4, "\(stopped)")
    #expect(!directory.exists("chunked.bin"))
    #expect(directory.exists("chunked.bin.part"), "the bytes up to the limit are kept")
    #expect(
      stopped.stderr.contains("were kept: running the same command without --max-filesize"), "\(stopped)")
    let resumed = try await Self.haul([
      "-q", "-o", directory.file("chunked.bin").path, server.url("/chunked.bin"),
    ])
    #expect(resumed.status == 0, "\(resumed)")
    expectBytes(directory.contents("chunked.bin"), equal: chunked)

    // A partial of an earlier run (stopped by a drop, no retries), then a rerun with the limit.
    var dropping = TestResource(body: big, etag: "\"b\"")
    dropping.faults.dropAfterBytes = 120_000
    dropping.faults.dropTimes = 1
    server.setResource("/big.bin", dropping)
    let partial = try await Self.haul([
      "-q", "--retries", "0", "-o", directory.file("p.bin").path, server.url("/big.bin"),
    ])
    #expect(partial.status == 4, "\(partial)")
    #expect(directory.exists("p.bin.part"))
    let rerun = try await Self.haul([
      "-q", "--max-filesize", "100K", "-o", directory.file("p.bin").path, server.url("/big.bin"),
    ])
    #expect(rerun.status == 4, "\(rerun)")
    #expect(directory.exists("p.bin.part") && directory.exists("p.bin.haul"), "the partial is kept")
    let fits = try await Self.haul([
      "-q", "--max-filesize", "1M", "-o", directory.file("p.bin").path, server.url("/big.bin"),
    ])
    #expect(fits.status == 0, "\(fits)")
    expectBytes(directory.contents("p.bin"), equal: big)
  }
}

extension CurlFlagsEndToEndTests {
  /// `-N`: a local file newer than the server's Last-Modified is kept (exit 0, saying so); an
  /// older one is replaced by the server's copy. The TestServer ignores If-Modified-Since, so
  /// this also covers libcurl's own check of Last-Modified.
  @Test func newerOnly() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 70)
    server.setResource(
      "/n.bin", TestResource(body: body, etag: "\"n\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT"))
    let directory = try TemporaryDirectory()
    let local = directory.file("n.bin")
    try Data("local copy".utf8).write(to: local)
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_800_000_000)], ofItemAtPath: local.path)

    let kept = try await Self.haul(["-N", "-o", local.path, server.url("/n.bin")])
    #expect(kept.status == 0, "\(kept)")
    #expect(kept.stderr.contains("not newer on the server, kept"), "\(kept)")
    #expect(directory.contents("n.bin") == Array("local copy".utf8))
    let asked = try #require(server.requests(for: "/n.bin").first)
    #expect(asked.header("If-Modified-Since") == "Fri, 15 Jan 2027 08:00:00 GMT", "\(asked)")

    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_600_000_000)], ofItemAtPath: local.path)
    let replaced = try await Self.haul(["-q", "--newer-only", "-o", local.path, server.url("/n.bin")])
    #expect(replaced.status == 0, "\(replaced)")
    expectBytes(directory.contents("n.bin"), equal: body)

    // No local file: an ordinary download.
    let fresh = try await Self.haul([
      "-q", "-N", "-o", directory.file("fresh.bin").path, server.url("/n.bin"),
    ])
    #expect(fresh.status == 0, "\(fresh)")
    expectBytes(directory.contents("fresh.bin"), equal: body)
  }

  /// `-R` (and `-N`, as in wget) give the file the server's Last-Modified, also on a rerun of a
  /// file finished without it. A later `-N` then
  /// fetches a copy changed on the server after that time, even one older than the download.
  @Test func remoteTimeAndNewerOnlyAfterIt() async throws {
    let server = try TestServer()
    let first = TestResource.random(size: 50_000, seed: 71)
    server.setResource(
      "/t.bin", TestResource(body: first, etag: "\"1\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT"))
    let directory = try TemporaryDirectory()
    func modified(_ name: String) -> Double? {
      let attributes = try? FileManager.default.attributesOfItem(atPath: directory.file(name).path)
      return (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970
    }
    let plain = try await Self.haul(["-q", "-o", directory.file("plain.bin").path, server.url("/t.bin")])
    #expect(plain.status == 0, "\(plain)")
    #expect((modified("plain.bin") ?? 0) > 1_700_000_000, "the download's own time without -R")
    // -R on a rerun of it (the server's copy the same) gives it the server's time, and the
    // reruns after it still find it complete, as sealed (also one finished without a SHA-256).
    let noHash = try await Self.haul(
      ["-q", "--no-sha256", "-o", directory.file("nohash.bin").path, server.url("/t.bin")])
    #expect(noHash.status == 0, "\(noHash)")
    for name in ["plain.bin", "nohash.bin"] {
      let later = try await Self.haul(["-R", "-o", directory.file(name).path, server.url("/t.bin")])
      #expect(later.status == 0 && later.stderr.contains("already complete"), "\(name): \(later)")
      #expect(modified(name) == 1_700_000_000, "\(name)")
      let after = try await Self.haul(["-o", directory.file(name).path, server.url("/t.bin")])
      #expect(after.status == 0 && after.stderr.contains("already complete"), "\(name): \(after)")
    }
    expectBytes(directory.contents("plain.bin"), equal: first)
    let remote = try await Self.haul(["-q", "-R", "-o", directory.file("r.bin").path, server.url("/t.bin")])
    #expect(remote.status == 0, "\(remote)")
    #expect(modified("r.bin") == 1_700_000_000)
    let newer = try await Self.haul(["-q", "-N", "-o", directory.file("n.bin").path, server.url("/t.bin")])
    #expect(newer.status == 0, "\(newer)")
    #expect(modified("n.bin") == 1_700_000_000)

    // Changed on the server a day later, long before today.
    let second = TestResource.random(size: 60_000, seed: 72)
    server.setResource(
      "/t.bin", TestResource(body: second, etag: "\"2\"", lastModified: "Wed, 15 Nov 2023 22:13:20 GMT"))
    let again = try await Self.haul(["-q", "-N", "-o", directory.file("n.bin").path, server.url("/t.bin")])
    #expect(again.status == 0, "\(again)")
    expectBytes(directory.contents("n.bin"), equal: second)
    #expect(modified("n.bin") == 1_700_086_400)
    // And a rerun trusts the file as sealed: already complete.
    let rerun = try await Self.haul(["-o", directory.file("n.bin").path, server.url("/t.bin")])
    #expect(rerun.stderr.contains("already complete"), "\(rerun)")
  }
}
