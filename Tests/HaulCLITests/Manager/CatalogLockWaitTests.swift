import Foundation
import Haul
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Subcommands that open the catalog themselves wait their turn (a bounded time) for another
/// process that holds it without serving the control socket, so parallel adds lose no URL.
@Suite("catalog lock wait")
struct CatalogLockWaitTests {
  static let nowhere = "http://127.0.0.1:9"

  @Test func parallelAddsWithoutAnOwnerAllSucceed() async throws {
    let fixture = try CatalogFixture()
    let count = 20
    let children = try (1...count).map { index in
      try fixture.start("add", ["--paused", "-d", "out", "\(Self.nowhere)/p\(index).bin"])
    }
    var ids: Set<String> = []
    for child in children {
      // Bounds a hang; each add waits at most 10 s for its turn.
      child.signal(SIGKILL, after: 300)
      let outcome = await child.wait()
      #expect(outcome.status == 0 && !outcome.signaled, "\(outcome)")
      ids.formUnion(outcome.stdout.split(separator: "\n").map(String.init))
    }
    #expect(ids.count == count)
    let listed = try await fixture.list()
    #expect(Set(listed.compactMap { $0["id"] }) == ids)
  }

  @Test func aHolderThatLetsGoWithinTheWaitIsWaitedFor() async throws {
    let fixture = try CatalogFixture()
    try await addWhileTheLockIsHeld(fixture, "later.bin")
    #expect(try await fixture.list().count == 1)
  }

  /// Another opener's catalog in the making: it holds the lock and has linked the new file into
  /// place, but its temporary name is not gone yet (two links, which an opener refuses). A
  /// parallel `haul add` that saw it then failed with "has 2 hard links" (CI, under ASan): the
  /// inspection before the lock refused what the one under the lock would have waited for.
  @Test func aCatalogInTheMakingIsWaitedFor() async throws {
    let fixture = try CatalogFixture()
    let made = fixture.catalog.deletingLastPathComponent().appendingPathComponent("made.sqlite")
    var configuration = DownloadManager.Configuration()
    configuration.launch = .hold
    await (try DownloadManager(catalog: made, configuration: configuration)).close()
    try await addWhileTheLockIsHeld(fixture, "made.bin") {
      try #require(link(made.path, fixture.catalog.path) == 0)
    } lettingGo: {
      unlink(made.path)
    }
    #expect(try await fixture.list().count == 1)
  }

  /// `haul add NAME` while the catalog's lock is held as another subcommand holds it (flock on
  /// CATALOG.lock), after `holding`; a thread of its own lets it go after 1.5 s, after
  /// `lettingGo` (the test pool may be starved, the wait is bounded). The add must succeed.
  private func addWhileTheLockIsHeld(
    _ fixture: CatalogFixture, _ name: String, holding: () throws -> Void = {},
    lettingGo: @escaping @Sendable () -> Void = {}
  ) async throws {
    let descriptor = open(fixture.catalog.path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    try #require(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
    try holding()
    let adding = try fixture.start("add", ["--paused", "-d", "out", "\(Self.nowhere)/\(name)"])
    adding.signal(SIGKILL, after: 300)
    Thread {
      usleep(1_500_000)
      lettingGo()
      close(descriptor)
    }.start()
    let outcome = await adding.wait()
    #expect(outcome.status == 0, "\(outcome)")
  }

  @Test func aHolderThatKeepsTheCatalogIsNamedOnceTheWaitRunsOut() async throws {
    let fixture = try CatalogFixture()
    var configuration = DownloadManager.Configuration()
    configuration.launch = .hold
    let holder = try DownloadManager(catalog: fixture.catalog, configuration: configuration)
    let outcome = try await fixture.run("pause", ["--all"])
    await holder.close()
    #expect(outcome.status == 1, "\(outcome)")
    #expect(outcome.stderr.contains("is in use by process \(getpid())"), "\(outcome)")
  }
}
