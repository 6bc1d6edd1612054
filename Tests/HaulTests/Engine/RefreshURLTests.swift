import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// Issue 11 part 4, second rule: a link that expires mid-download (401, 403 or 410 once bytes
/// are held) asks `DownloadOptions.refreshURL` for a fresh one, which continues only when its
/// first answer proves the same file.
@Suite struct RefreshURLTests {
  typealias Run = DownloadTests

  /// The refresher's calls, with the URLs it was given.
  final class Calls: Sendable {
    private let given = Mutex<[String]>([])
    func record(_ url: String) { given.withLock { $0.append(url) } }
    var urls: [String] { given.withLock { $0 } }
  }

  /// `/a` serves 200,000 bytes of `body`, is cut, and answers `status` from then on.
  static func expiringServer(_ body: [UInt8], status: Int = 403) throws -> TestServer {
    let server = try TestServer()
    var faults = TestFaults(dropAfterBytes: 200_000, dropTimes: 1)
    faults.expireAfterResponses = 1
    faults.expiredStatus = status
    server.setResource("/a", TestResource(body: body, etag: "\"v1\"", faults: faults))
    return server
  }

  static func options(_ calls: Calls, answer: @escaping @Sendable (String) -> String?) -> DownloadOptions {
    var options = Run.fastOptions()
    options.checkpointInterval = 0.01
    options.refreshURL = { expired in
      calls.record(expired)
      return answer(expired)
    }
    return options
  }

  @Test(arguments: [401, 403, 410])
  func aFreshURLOfTheSameFileContinues(_ status: Int) async throws {
    let body = TestResource.random(size: 600_000, seed: 150)
    let server = try Self.expiringServer(body, status: status)
    server.setResource("/b", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let calls = Calls()
    let fresh = server.url("/b")
    let outcome = try await Run.run(
      server.url("/a"), to: .file(file), options: Self.options(calls) { _ in fresh })
    #expect(outcome.error == nil, "\(String(describing: outcome.error))")
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(calls.urls == [server.url("/a")])
    #expect(outcome.restarts.isEmpty)
    let asked = server.requests(for: "/b")
    #expect(asked.count == 1)
    #expect(asked.first?.header("Range") == "bytes=200000-" && asked.first?.header("If-Range") == "\"v1\"")
  }

  @Test func aFreshURLOfAnotherFileLeavesThePartialAlone() async throws {
    let body = TestResource.random(size: 600_000, seed: 151)
    let server = try Self.expiringServer(body)
    server.setResource(
      "/c", TestResource(body: TestResource.random(size: 600_000, seed: 152), etag: "\"v2\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let calls = Calls()
    let other = server.url("/c")
    let outcome = try await Run.run(
      server.url("/a"), to: .file(file), options: Self.options(calls) { _ in other })
    #expect(outcome.error?.category == .fileSystem)
    #expect(outcome.error?.message.contains("another URL") == true, "\(String(describing: outcome.error))")
    #expect(calls.urls.count == 1)
    let part = URL(fileURLWithPath: file.path + ".part")
    do {
      let same = Run.holds(part, Array(body[0..<200_000]))
      #expect(same, "the partial changed")
    }
    #expect(SavedProgress.load(for: file)?.url == server.url("/a"))
    #expect(!Run.exists(file.path))
  }

  @Test func noFreshURLFailsWithTheExpiredLinkMessage() async throws {
    let body = TestResource.random(size: 600_000, seed: 153)
    let server = try Self.expiringServer(body)
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let calls = Calls()
    let outcome = try await Run.run(
      server.url("/a"), to: .file(file), options: Self.options(calls) { _ in nil })
    #expect(
      outcome.error?.message.contains("seems to have expired") == true, "\(String(describing: outcome.error))"
    )
    #expect(outcome.error?.message.contains("no fresh URL") == true)
    #expect(outcome.error?.hint?.contains("fresh URL") == true)
    #expect(calls.urls.count == 1)
    #expect(SavedProgress.load(for: file)?.bytes == 200_000)
  }

  @Test func withoutARefresherTheMessageSaysHowToContinue() async throws {
    let body = TestResource.random(size: 600_000, seed: 154)
    let server = try Self.expiringServer(body)
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var options = Run.fastOptions()
    options.checkpointInterval = 0.01
    let outcome = try await Run.run(server.url("/a"), to: .file(file), options: options)
    #expect(outcome.error?.category == .server)
    #expect(
      outcome.error?.message.contains("seems to have expired") == true, "\(String(describing: outcome.error))"
    )
    #expect(
      outcome.error?.message.contains("403 Forbidden with 195 KiB held") == true,
      "\(String(describing: outcome.error))")
    #expect(outcome.error?.hint?.contains("same destination resumes") == true)
    #expect(SavedProgress.load(for: file)?.bytes == 200_000)
  }

  /// A refresher that keeps handing out dead links is asked `refreshLimit` times, then the run ends.
  @Test func refreshesAreBounded() async throws {
    let body = TestResource.random(size: 600_000, seed: 155)
    let server = try Self.expiringServer(body)
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    let calls = Calls()
    let dead = server.url("/a")
    let outcome = try await Run.run(
      server.url("/a"), to: .file(file), options: Self.options(calls) { _ in dead })
    #expect(calls.urls.count == DownloadOptions.refreshLimit)
    #expect(
      outcome.error?.message.contains("again after 3 fresh URLs") == true,
      "\(String(describing: outcome.error))")
    #expect(SavedProgress.load(for: file)?.bytes == 200_000)
  }

  /// A 403 before any byte is held is a refusal, not an expired link: no refresh.
  @Test func aRefusalFromTheStartIsNotRefreshed() async throws {
    let server = try TestServer()
    var faults = TestFaults()
    faults.expireAfterResponses = 0
    server.setResource("/a", TestResource(body: TestResource.random(size: 1000, seed: 156), faults: faults))
    let directory = try TemporaryDirectory()
    let calls = Calls()
    let outcome = try await Run.run(
      server.url("/a"), to: .file(directory.file("f")), options: Self.options(calls) { _ in nil })
    #expect(outcome.error?.message == "the server answered 403 Forbidden")
    #expect(calls.urls.isEmpty)
  }
}
