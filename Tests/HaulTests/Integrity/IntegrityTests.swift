import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// Checksums and server digests: a flipped byte never becomes the file.
@Suite struct IntegrityTests {
  static func digest(_ bytes: [UInt8], _ algorithm: MessageDigest.Algorithm = .sha256) -> [UInt8] {
    guard let digest = try? MessageDigest(algorithm) else { return [] }
    digest.update(bytes)
    return digest.finish()
  }

  static func hex(_ bytes: [UInt8], _ algorithm: MessageDigest.Algorithm = .sha256) -> String {
    MessageDigest.hex(digest(bytes, algorithm))
  }

  static func base64(_ bytes: [UInt8], _ algorithm: MessageDigest.Algorithm = .sha256) -> String {
    Data(digest(bytes, algorithm)).base64EncodedString()
  }

  /// The served body with one byte flipped: what a corrupting proxy or disk would deliver.
  static func flipped(_ body: [UInt8], at index: Int) -> [UInt8] {
    var copy = body
    copy[index] ^= 0x01
    return copy
  }

  static func expectRejected(_ outcome: DownloadTests.Outcome, file: URL) {
    #expect(outcome.error?.category == .integrity)
    #expect(outcome.error?.category.exitCode == 9)
    #expect(outcome.error?.message.contains("mismatch") == true)
    #expect(!FileManager.default.fileExists(atPath: file.path))
    #expect(!FileManager.default.fileExists(atPath: file.path + ".part"))
    #expect(!FileManager.default.fileExists(atPath: file.path + ".haul"))
  }

  @Test func completedEventCarriesTheSHA256() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 60)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(directory.file("f")))
    #expect(outcome.value?.sha256 == Self.hex(body))
    #expect(server.requests.first?.header("Want-Repr-Digest")?.contains("sha-256") == true)
  }

  @Test func sha256CanBeTurnedOffUnlessSomethingNeedsIt() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 69)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    var options = DownloadTests.fastOptions()
    options.computeSHA256 = false
    let plain = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("a")), options: options)
    #expect(plain.error == nil)
    #expect(plain.value?.sha256 == nil)
    // A checksum still gets verified, and a SHA-256 one is reported.
    options.checksum = try Checksum(parsing: "sha-256=\(Self.hex(Self.flipped(body, at: 7)))")
    let checked = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("b")), options: options)
    Self.expectRejected(checked, file: directory.file("b"))
    options.checksum = try Checksum(parsing: "sha-256=\(Self.hex(body))")
    let good = try await DownloadTests.run(server.url("/f"), to: .file(directory.file("c")), options: options)
    #expect(good.value?.sha256 == Self.hex(body))
  }

  @Test(arguments: [1, 4])
  func expectedChecksumPassesOrRejects(connections: Int) async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 3_000_000, seed: 61)
    server.setResource("/good", TestResource(body: body, etag: "\"g\""))
    server.setResource("/bad", TestResource(body: Self.flipped(body, at: 2_500_000), etag: "\"b\""))
    let directory = try TemporaryDirectory()
    var options = DownloadTests.fastOptions()
    options.connections = connections
    options.checksum = try Checksum(parsing: "sha-256=\(Self.hex(body))")
    let good = try await DownloadTests.run(
      server.url("/good"), to: .file(directory.file("good")), options: options)
    #expect(good.error == nil)
    let same = DownloadTests.holds(directory.file("good"), body)
    #expect(same)
    let bad = try await DownloadTests.run(
      server.url("/bad"), to: .file(directory.file("bad")), options: options)
    Self.expectRejected(bad, file: directory.file("bad"))
  }

  @Test(arguments: ["sha-512", "sha-1", "md5"])
  func otherAlgorithms(name: String) async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 62)
    server.setResource("/f", TestResource(body: body))
    let algorithm: MessageDigest.Algorithm = name == "sha-512" ? .sha512 : name == "sha-1" ? .sha1 : .md5
    var options = DownloadTests.fastOptions()
    options.checksum = try Checksum(parsing: "\(name)=\(Self.hex(body, algorithm).uppercased())")
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("f")), options: options)
    #expect(outcome.error == nil)
  }

  /// Whole-file digests, on one connection and on four (64 KiB segments). `Content-Digest` is
  /// sent for each response's own bytes (of the true data), so on four connections the 200
  /// carries the whole file's and every 206 its range's; the flipped byte is in the 200.
  @Test(arguments: [
    ("Repr-Digest", 1), ("Repr-Digest", 4), ("Content-Digest", 1), ("Content-Digest", 4), ("Digest", 1),
    ("Digest", 4),
  ])
  func serverDigestsAreVerified(header: String, connections: Int) async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 63)
    let value = header == "Digest" ? "SHA-256=\(Self.base64(body))" : "sha-256=:\(Self.base64(body)):"
    // Slow enough that more connections join.
    let faults = TestFaults(bytesPerSecond: connections > 1 ? 2_000_000 : nil)
    var good = TestResource(body: body, etag: "\"g\"", faults: faults)
    var bad = TestResource(body: Self.flipped(body, at: 123), etag: "\"b\"", faults: faults)
    if header == "Content-Digest" {
      good.contentDigest = Self.contentDigest
      bad.contentDigest = { sent in Self.contentDigest(body[sent.indices]) }
    } else {
      good.extraHeaders = [(header, value)]
      bad.extraHeaders = [(header, value)]
    }
    server.setResource("/good", good)
    server.setResource("/bad", bad)
    let directory = try TemporaryDirectory()
    var options = DownloadTests.fastOptions()
    options.connections = connections
    let passed = try await DownloadTests.run(
      server.url("/good"), to: .file(directory.file("good")), options: options, minimumSplit: 64 << 10)
    #expect(passed.error == nil)
    let rejected = try await DownloadTests.run(
      server.url("/bad"), to: .file(directory.file("bad")), options: options, minimumSplit: 64 << 10)
    Self.expectRejected(rejected, file: directory.file("bad"))
    if connections > 1 {
      #expect(server.requests(for: "/good").contains { $0.status == 206 }, "the download was not segmented")
    }
  }

  /// RFC 9530 `Content-Digest` of exactly the bytes a response carries.
  static let contentDigest: @Sendable (ArraySlice<UInt8>) -> String = { "sha-256=:\(base64(Array($0))):" }

  static func refetchNotices(_ events: [DownloadEvent]) -> [RetryNotice] {
    events.compactMap {
      if case .retrying(let notice) = $0, notice.reason.message.contains("Content-Digest") {
        notice
      } else {
        nil
      }
    }
  }

  /// 206 requests whose range held `offset`.
  static func rangesHolding(_ offset: Int, _ requests: [RecordedRequest]) -> Int {
    requests.filter { request in
      guard request.status == 206,
        case .range(let first, let last, _)? = request.contentRange.flatMap(
          ContentRange.init(headerValue:))
      else { return false }
      return first <= Int64(offset) && Int64(offset) <= last
    }.count
  }

  /// A server that sends `Content-Digest` with every response, and a download of `/f` from it
  /// interrupted after 100,000 of 600,000 bytes: the rest comes as a 206.
  static func partialFromDigestServer(seed: UInt64) async throws -> (
    server: TestServer, body: [UInt8], file: URL, directory: TemporaryDirectory
  ) {
    let server = try TestServer()
    let body = TestResource.random(size: 600_000, seed: seed)
    var resource = TestResource(body: body, etag: "\"c\"")
    resource.contentDigest = Self.contentDigest
    server.setResource("/f", resource)
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await DownloadTests.makePartial(server: server, path: "/f", file: file, bytes: 100_000)
    return (server, body, file, directory)
  }

  @Test func aRangeFailingItsContentDigestIsFetchedAgainOnce() async throws {
    let (server, body, file, directory) = try await Self.partialFromDigestServer(seed: 66)
    defer { withExtendedLifetime(directory) {} }
    server.updateFaults("/f") {
      $0.corruptByte = 400_000
      $0.corruptTimes = 1
    }
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(file))
    #expect(outcome.error == nil)
    let same = DownloadTests.holds(file, body)
    #expect(same, "file bytes differ")
    #expect(outcome.value?.sha256 == Self.hex(body))
    #expect(Self.rangesHolding(400_000, server.requests(for: "/f")) == 2)
    #expect(server.requests(for: "/f").last?.header("Want-Content-Digest")?.contains("sha-256") == true)
  }

  @Test func aRangeFailingItsContentDigestTwiceEndsTheDownload() async throws {
    let (server, body, file, directory) = try await Self.partialFromDigestServer(seed: 67)
    defer { withExtendedLifetime(directory) {} }
    server.updateFaults("/f") { $0.corruptByte = 400_000 }
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(file))
    #expect(outcome.error?.category.exitCode == 9)
    #expect(outcome.error?.message.contains("Content-Digest twice") == true)
    #expect(!FileManager.default.fileExists(atPath: file.path))
    #expect(Self.rangesHolding(400_000, server.requests(for: "/f")) == 2)
    // The verified bytes stay; once the data is good again, only the missing range comes over.
    server.updateFaults("/f") { $0.corruptByte = nil }
    let sentBefore = server.bodyBytesSent(for: "/f")
    let again = try await DownloadTests.run(server.url("/f"), to: .file(file))
    #expect(again.error == nil)
    let same = DownloadTests.holds(file, body)
    #expect(same, "file bytes differ")
    #expect(server.bodyBytesSent(for: "/f") - sentBefore == 500_000)
  }

  @Test func segmentedRangesAreCheckedAgainstTheirContentDigests() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 4_000_000, seed: 68)
    var resource = TestResource(
      body: body, etag: "\"s\"", faults: TestFaults(bytesPerSecond: 4_000_000))
    resource.contentDigest = Self.contentDigest
    resource.faults.corruptByte = 3_500_000
    resource.faults.corruptTimes = 1
    server.setResource("/f", resource)
    let directory = try TemporaryDirectory()
    var options = DownloadTests.fastOptions()
    options.connections = 4
    let outcome = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("f")), options: options, minimumSplit: 64 << 10)
    #expect(outcome.error == nil)
    let same = DownloadTests.holds(directory.file("f"), body)
    #expect(same, "file bytes differ")
    #expect(Self.rangesHolding(3_500_000, server.requests(for: "/f")) >= 2)
    #expect(Self.refetchNotices(outcome.events).count == 1)
  }

  @Test func partialContentDigestDoesNotStandForTheWholeFile() async throws {
    // A 206's Content-Digest covers only that part; it must not be compared with the whole file.
    let server = try TestServer()
    let body = TestResource.random(size: 400_000, seed: 64)
    server.setResource("/f", TestResource(body: body, etag: "\"p\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await DownloadTests.makePartial(server: server, path: "/f", file: file, bytes: 100_000)
    var resource = TestResource(body: body, etag: "\"p\"")
    resource.extraHeaders = [("Content-Digest", "sha-256=:\(Self.base64(Array(body[100_000...]))):")]
    server.setResource("/f", resource)
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(file))
    #expect(server.requests.last?.status == 206)
    #expect(outcome.error == nil)
    #expect(outcome.value?.sha256 == Self.hex(body))
  }

  @Test func resumedDownloadIsVerifiedOverAllItsBytes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 600_000, seed: 65)
    var resource = TestResource(body: body, etag: "\"r\"")
    resource.extraHeaders = [("Repr-Digest", "sha-256=:\(Self.base64(body)):")]
    server.setResource("/f", resource)
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await DownloadTests.makePartial(server: server, path: "/f", file: file, bytes: 250_000)
    // A byte of the earlier session's part goes bad on disk; only the new bytes come over the wire.
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: file.path + ".part"))
    try handle.seek(toOffset: 1000)
    try handle.write(contentsOf: Data([body[1000] ^ 0xFF]))
    try handle.close()
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(file))
    Self.expectRejected(outcome, file: file)
    // The rerun starts clean and succeeds.
    let again = try await DownloadTests.run(server.url("/f"), to: .file(file))
    #expect(again.value?.sha256 == Self.hex(body))
  }

  @Test func checksumParsing() throws {
    #expect(
      try Checksum(parsing: "SHA256=\(String(repeating: "A", count: 64))").hex
        == String(repeating: "a", count: 64))
    #expect(throws: HaulError.self) { try Checksum(parsing: "sha-256=abc") }
    #expect(throws: HaulError.self) { try Checksum(parsing: "crc32=deadbeef") }
    #expect(throws: HaulError.self) { try Checksum(parsing: "no-equals") }
    #expect(
      ServerDigests.parseStructured("sha-256=:\(Self.base64([1])):, md5=:bad:")[.sha256] == Self.hex([1]))
    #expect(
      ServerDigests.parseLegacy("MD5=\(Self.base64([1], .md5)), SHA-256=\(Self.base64([1]))")[.md5]
        == Self.hex([1], .md5))
    #expect(ServerDigests.parseStructured("sha-256=:AAAA:").isEmpty)
  }
}
