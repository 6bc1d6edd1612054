import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// `DownloadOptions.refreshURL` given to a manager: kept in memory, asked when a link expires.
@Suite("manager refreshURL", .timeLimit(.minutes(2)))
struct ManagerRefreshURLTests {
  /// `/a` serves 200,000 bytes of its 600,000, is cut, then answers 403; `/b` is the same file.
  static func expiring(_ fixture: ManagerFixture) -> [UInt8] {
    let body = TestResource.random(size: 600_000, seed: 160)
    var faults = TestFaults(dropAfterBytes: 200_000, dropTimes: 1)
    faults.expireAfterResponses = 1
    fixture.server.setResource("/a", TestResource(body: body, etag: "\"v1\"", faults: faults))
    fixture.server.setResource("/b", TestResource(body: body, etag: "\"v1\""))
    return body
  }

  static func options(fresh: String, asked: TestLock<[String]>) -> DownloadOptions {
    var options = DownloadOptions()
    options.connections = 1
    options.retryBaseDelay = 0.01
    options.maxRetryDelay = 0.05
    options.checkpointInterval = 0.01
    options.refreshURL = { expired in
      asked.withLock { $0.append(expired) }
      return fresh
    }
    return options
  }

  @Test func anAddedDownloadAsksItsRefreshURLWhenTheLinkExpires() async throws {
    let fixture = try ManagerFixture()
    let body = Self.expiring(fixture)
    let asked = TestLock<[String]>([])
    let manager = try fixture.open()
    let options = Self.options(fresh: fixture.server.url("/b"), asked: asked)
    let id = try await manager.add(
      fixture.server.url("/a"), to: .directory(fixture.downloads), options: options)
    #expect(await idle(manager))
    // Before, the manager ran it without the closure: the 403 failed it.
    let snapshot = try #require(manager.download(id))
    #expect(snapshot.state == .complete, "\(String(describing: snapshot.error))")
    #expect(asked.withLock { $0 } == [fixture.server.url("/a")])
    let exact = snapshot.file.flatMap { FileManager.default.contents(atPath: $0.path) } == Data(body)
    #expect(exact, "\(String(describing: snapshot.file))")
    #expect(try manager.options(of: id).options.refreshURL != nil)
    await manager.close()
  }

  @Test func changeOptionsGivesAndTakesTheRefreshURL() async throws {
    let fixture = try ManagerFixture()
    let body = Self.expiring(fixture)
    let asked = TestLock<[String]>([])
    let manager = try fixture.open()
    let id = try await manager.add(
      fixture.server.url("/a"), to: .directory(fixture.downloads), paused: true)
    try await manager.changeOptions(id, to: Self.options(fresh: fixture.server.url("/b"), asked: asked))
    #expect(try manager.options(of: id).options.refreshURL != nil)
    try await manager.resume(id)
    #expect(await idle(manager))
    let snapshot = try #require(manager.download(id))
    #expect(snapshot.state == .complete)
    let exact = snapshot.file.flatMap { FileManager.default.contents(atPath: $0.path) } == Data(body)
    #expect(exact, "\(String(describing: snapshot.file))")
    #expect(asked.withLock { $0 }.count == 1)

    let other = try await manager.add(
      fixture.server.url("/b"), to: .file(fixture.file("b")),
      options: Self.options(fresh: fixture.server.url("/b"), asked: asked), paused: true)
    try await manager.changeOptions(other, to: DownloadOptions())
    #expect(try manager.options(of: other).options.refreshURL == nil)
    await manager.close()
  }
}
