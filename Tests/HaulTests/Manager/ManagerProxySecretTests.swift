import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// A proxy URL's password is a secret like the download URL's: kept in memory, never in the
/// catalog.
@Suite("manager proxy password", .timeLimit(.minutes(2)))
struct ManagerProxySecretTests {
  @Test func aProxyPasswordStaysInMemoryAndOutOfTheCatalog() async throws {
    let fixture = try ManagerFixture()
    let proxies = ["http://joe:proxy-pw-1f3a@127.0.0.1:9", "ann:proxy-pw-8c2e@127.0.0.1:9"]
    var ids: [DownloadID] = []
    do {
      let manager = try fixture.open()
      for (index, proxy) in proxies.enumerated() {
        var options = DownloadOptions()
        options.network.proxy = proxy
        ids.append(
          try await manager.add(
            fixture.server.url("/\(index)"), to: .directory(fixture.downloads), options: options, paused: true
          ))
      }
      for (id, proxy) in zip(ids, proxies) {
        #expect(try manager.options(of: id).options.network.proxy == proxy, "memory keeps it for runs")
      }
      ManagerCredentialsTests.expectAbsent(["proxy-pw"], fixture, "while open")
      await manager.close()
    }
    // Before, the catalog held the proxy URL as given, password and all.
    ManagerCredentialsTests.expectAbsent(["proxy-pw"], fixture, "after closing")
    let manager = try fixture.open()
    #expect(try manager.options(of: ids[0]).options.network.proxy == "http://joe@127.0.0.1:9")
    #expect(try manager.options(of: ids[1]).options.network.proxy == "ann@127.0.0.1:9")
    await manager.close()
  }
}
