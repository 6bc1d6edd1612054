import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// URL passwords and Authorization headers never reach the catalog; after a relaunch a download
/// that needs them waits, saying so, until given them again.
@Suite("manager credentials", .timeLimit(.minutes(2)))
struct ManagerCredentialsTests {
  static let token = "Bearer s3cr3t-token-7d1f"
  static let password = "hunter2-password-9c4e"

  static func expectNoSecrets(_ fixture: ManagerFixture, _ when: String) {
    expectAbsent([token, password, "s3cr3t", "hunter2"], fixture, when)
  }

  /// None of `secrets` is in the catalog or its log.
  static func expectAbsent(_ secrets: [String], _ fixture: ManagerFixture, _ when: String) {
    let bytes = fixture.catalogBytes()
    #expect(!bytes.isEmpty)
    for secret in secrets {
      let found = bytes.indices.dropLast(secret.utf8.count - 1).contains {
        bytes[$0..<($0 + secret.utf8.count)].elementsEqual(secret.utf8)
      }
      #expect(!found, "\(secret) is in the catalog \(when)")
    }
  }

  @Test func secretsStayInMemoryAndAreAskedForAgainAfterARelaunch() async throws {
    let fixture = try ManagerFixture()
    let privateBody = TestResource.random(size: 1_000_000, seed: 50)
    fixture.server.setResource(
      "/private.bin",
      TestResource(
        body: privateBody, etag: "\"p\"",
        faults: TestFaults(stallAfterBytes: 100_000, stallTimes: 1, requireAuthorization: Self.token)))
    let basicBody = fixture.serve("/basic.bin", size: 50_000, seed: 51)
    let withPassword = fixture.server.url("/basic.bin").replacingOccurrences(
      of: "http://", with: "http://joe:\(Self.password)@")
    var options = DownloadOptions()
    options.connections = 1
    options.headers = [("X-Trace", "visible"), ("Authorization", Self.token)]
    var privateID = DownloadID.placeholder
    var basicID = DownloadID.placeholder
    do {
      let manager = try fixture.open()
      let log = EventLog(manager)
      privateID = try await manager.add(
        fixture.server.url("/private.bin"), to: .directory(fixture.downloads), options: options)
      basicID = try await manager.add(withPassword, to: .directory(fixture.downloads), paused: true)
      #expect(
        await log.wait { if case .progress(privateID, let p) = $0 { p.bytes >= 100_000 } else { false } })
      #expect(manager.download(basicID)?.url.contains("joe@127.0.0.1") == true)
      #expect(manager.download(basicID)?.url.contains(Self.password) == false)
      #expect(try manager.options(of: privateID).options.headers.last?.value == Self.token, "memory has it")
      Self.expectNoSecrets(fixture, "while running")
      await manager.close()
    }
    Self.expectNoSecrets(fixture, "after closing")

    let manager = try fixture.open()
    let log = EventLog(manager)
    let waiting = try #require(manager.download(privateID))
    #expect(waiting.state == .paused && waiting.needsCredentials)
    #expect(waiting.error?.category == .authentication)
    #expect(waiting.error?.message.contains("credentials") == true, "\(String(describing: waiting.error))")
    #expect(waiting.bytes == 100_000, "what it holds is kept")
    #expect(manager.download(basicID)?.needsCredentials == true)
    let refused = await #expect(throws: HaulError.self) { try await manager.resume(privateID) }
    #expect(refused?.category == .authentication)
    #expect(try manager.options(of: privateID).options.headers.map(\.name) == ["X-Trace"])

    // Given again, the one that waited continues from its bytes by itself.
    try await manager.changeOptions(privateID, to: options)
    #expect(await log.wait("completed", privateID))
    let exactPrivate = fixture.contents("private.bin") == privateBody
    #expect(exactPrivate)
    let requests = fixture.server.requests(for: "/private.bin")
    #expect(requests.last?.header("Authorization") == Self.token)
    #expect(requests.last?.header("Range")?.hasPrefix("bytes=") == true, "resumed: \(requests)")

    // The one the user paused stays paused when given its password, until resumed.
    try await manager.changeURL(basicID, to: withPassword)
    #expect(
      manager.download(basicID)?.state == .paused && manager.download(basicID)?.needsCredentials == false)
    try await manager.resume(basicID)
    #expect(await idle(manager))
    let exactBasic = fixture.contents("basic.bin") == basicBody
    #expect(exactBasic)
    #expect(
      fixture.server.requests(for: "/basic.bin").last?.header("Authorization")?.hasPrefix("Basic ") == true)
    Self.expectNoSecrets(fixture, "after the relaunch")
    await manager.close()
    Self.expectNoSecrets(fixture, "at the end")
  }

  @Test func optionsKeepEveryFieldButSecrets() throws {
    let covered = StoredOptions.coveredOptionFields
    let fields = Set(Mirror(reflecting: DownloadOptions()).children.compactMap(\.label))
    #expect(
      fields == covered,
      "DownloadOptions has fields StoredOptions does not know: \(fields.subtracting(covered).sorted()); store them"
    )
    var options = DownloadOptions()
    options.connections = 8
    options.rateLimit = 1234
    options.maxAttemptsWithoutProgress = 3
    options.stallTimeout = 9
    options.headers = [("Cookie", "c=1"), ("Accept", "x/y"), ("proxy-authorization", "Basic Zm9v")]
    options.checksum = try Checksum(parsing: "md5=0123456789abcdef0123456789abcdef")
    options.computeSHA256 = false
    options.overwrite = true
    options.keepPartialOnCancel = false
    options.verifyTLS = false
    options.retryBaseDelay = 2
    options.maxRetryDelay = 7
    options.checkpointInterval = 0.5
    options.progressInterval = 0.3
    options.userAgent = "agent"
    options.fallbackFileName = "f.1.bin"
    let (stored, secrets) = StoredOptions.split(options)
    #expect(secrets == [0: "c=1", 2: "Basic Zm9v"])
    #expect(stored.headers.map(\.value) == [nil, "x/y", nil])
    let json = try JSONEncoder().encode(stored)
    #expect(!String(decoding: json, as: UTF8.self).contains("Zm9v"))
    let back = try JSONDecoder().decode(StoredOptions.self, from: json)
    #expect(back == stored)
    let restored = back.options(secretHeaders: secrets)
    #expect(restored.headers.map(\.name) == ["Cookie", "Accept", "proxy-authorization"])
    #expect(restored.headers.map(\.value) == ["c=1", "x/y", "Basic Zm9v"])
    #expect(StoredOptions.split(restored).0 == stored, "every field survives")
    #expect(
      back.options(secretHeaders: [:]).headers.map(\.name) == ["Accept"], "a missing secret is left out")
    let old = try JSONDecoder().decode(StoredOptions.self, from: Data(#"{"connections":2}"#.utf8))
    #expect(
      old.connections == 2 && old.userAgent == DownloadOptions().userAgent, "missing fields take defaults")
  }
}
