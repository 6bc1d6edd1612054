import FleetTestSupport
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#endif

/// A `DownloadManager` on the queue killed with -9 mid-download: its leases expire, and a manager
/// opened afterwards takes the downloads back and finishes them from their `.part` files.
@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct PostgresCatalogCrashTests {
  @Test func aKilledManagersDownloadsFinishInTheNextOneFromTheirBytes() async throws {
    let server = try TestServer()
    defer { server.stop() }
    var bodies: [[UInt8]] = []
    for index in 0..<2 {
      let body = TestResource.random(size: 1_200_000 + index, seed: UInt64(70 + index))
      var faults = TestFaults()
      // Far longer than the test takes to kill it, however loaded the machine: 40 kB/s, and silent
      // after every 200 kB until the engine's 30 s stall timeout, so about three minutes (in a
      // full ASan run a throttle alone, 30 s, ended before this starved test process killed it).
      faults.bytesPerSecond = 40_000
      faults.stallAfterBytes = 200_000
      server.setResource("/k\(index).bin", TestResource(body: body, etag: "\"k\(index)\"", faults: faults))
      bodies.append(body)
    }
    let url = try FleetTestDatabase.url()
    let base = try TemporaryDirectory()
    let child = try FleetChild.start(
      ["manager", url, base.url.path, "3", server.url("/k0.bin"), server.url("/k1.bin")])
    let added = try #require(await child.line("added "), "the child said nothing: \(child.stderr)")
    let ids = added.split(separator: " ").dropFirst().map(String.init)
    #expect(ids.count == 2)
    let queue = try await FleetQueue(PostgresAddress(url))
    // Killed once both have bytes in the queue (the child's progress writes).
    var written = false
    for _ in 0..<600 where !written {
      written = try await queue.jobs().allSatisfy { $0.state == .active && $0.bytes > 0 }
      if !written { try await Task.sleep(for: .milliseconds(100)) }
    }
    #expect(written, "no progress in the queue: \(child.stderr)")
    #expect(await child.kill(), "the child ended before the kill: \(child.stderr)")
    let held = try await queue.jobs()
    #expect(held.allSatisfy { $0.state == .active && $0.worker != nil })
    for index in 0..<2 {
      server.updateFaults("/k\(index).bin") {
        $0.bytesPerSecond = nil
        $0.stallAfterBytes = nil
      }
    }
    // Only the next manager's requests: the child's own retries after a stall ask for ranges too.
    server.clearRequests()

    let manager = try DownloadManager(
      queue: try PostgresAddress(url), baseDirectory: base.url, leaseSeconds: 3)
    let log = EventLog(manager)
    #expect(Set(manager.downloads().map(\.id.description)) == Set(ids))
    for id in manager.downloads().map(\.id) { #expect(await log.wait("completed", id)) }
    #expect(await idle(manager))
    await manager.close()
    for (index, body) in bodies.enumerated() {
      #expect(try Data(contentsOf: base.file("k\(index).bin")) == Data(body))
      // The second run asked for what the first had not written.
      let ranges = server.requests(for: "/k\(index).bin").compactMap { $0.headers["Range"] }
      #expect(ranges.contains { $0.hasPrefix("bytes=") && !$0.hasPrefix("bytes=0-") })
    }
    let jobs = try await queue.jobs()
    #expect(jobs.allSatisfy { $0.state == .complete && $0.lostLeases == 1 })
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: base.url.path).sorted()
    #expect(leftovers == ["k0.bin", "k1.bin"])
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }
}

/// `FleetBench` (built with the tests) as a child process, its output in files.
enum FleetChild {
  static let binary = LoggedChild.builtExecutable(named: "FleetBench")

  static func start(_ arguments: [String]) throws -> LoggedChild {
    guard let binary else {
      throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "FleetBench was not built"])
    }
    return try LoggedChild(binary, arguments)
  }
}
