import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// `network.password` (`-u USER:PASSWORD`) and `network.cookies` are secrets like a URL's
/// password: never in the catalog, and after a relaunch the download waits for them instead of
/// running without them (a 401 for the password, a wrong answer for the cookies).
@Suite("manager network secrets", .timeLimit(.minutes(2)))
struct ManagerNetworkSecretsTests {
  static let password = "pw-5e1b-network-secret"
  static let cookies = "session=c00k1e-7a2d"

  @Test func passwordAndCookiesWaitAfterARelaunchUntilGivenAgain() async throws {
    let fixture = try ManagerFixture()
    let basic = "Basic " + Data("joe:\(Self.password)".utf8).base64EncodedString()
    let body = TestResource.random(size: 60_000, seed: 60)
    fixture.server.setResource(
      "/basic.bin", TestResource(body: body, etag: "\"b\"", faults: TestFaults(requireAuthorization: basic)))
    _ = fixture.serve("/cookie.bin", size: 20_000, seed: 61)
    var withPassword = DownloadOptions()
    withPassword.network.username = "joe"
    withPassword.network.password = Self.password
    var withCookies = DownloadOptions()
    withCookies.network.cookies = Self.cookies
    var basicID = DownloadID.placeholder
    var cookieID = DownloadID.placeholder
    do {
      let manager = try fixture.open()
      basicID = try await manager.add(
        fixture.server.url("/basic.bin"), to: .directory(fixture.downloads), options: withPassword,
        paused: true)
      cookieID = try await manager.add(
        fixture.server.url("/cookie.bin"), to: .directory(fixture.downloads), options: withCookies,
        paused: true)
      #expect(manager.download(basicID)?.needsCredentials == false, "memory has them")
      #expect(try manager.options(of: basicID).options.network.password == Self.password)
      await manager.close()
    }
    ManagerCredentialsTests.expectAbsent([Self.password, "c00k1e"], fixture, "after closing")

    let manager = try fixture.open()
    let log = EventLog(manager)
    for id in [basicID, cookieID] {
      let waiting = try #require(manager.download(id))
      #expect(waiting.state == .paused && waiting.needsCredentials, "\(id): \(waiting)")
      let refused = await #expect(throws: HaulError.self) { try await manager.resume(id) }
      #expect(refused?.category == .authentication)
    }
    #expect(fixture.server.requests(for: "/basic.bin").isEmpty, "never run without its password")

    // Given again, it runs with them.
    try await manager.changeOptions(basicID, to: withPassword)
    #expect(manager.download(basicID)?.needsCredentials == false)
    try await manager.resume(basicID)
    #expect(await log.wait("completed", basicID))
    #expect(fixture.contents("basic.bin") == body)
    #expect(fixture.server.requests(for: "/basic.bin").last?.header("Authorization") == basic)
    try await manager.changeOptions(cookieID, to: withCookies)
    try await manager.resume(cookieID)
    #expect(await log.wait("completed", cookieID))
    #expect(fixture.server.requests(for: "/cookie.bin").last?.header("Cookie") == Self.cookies)
    ManagerCredentialsTests.expectAbsent([Self.password, "c00k1e"], fixture, "at the end")
    await manager.close()
  }
}
