import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `HaulManagerHarness` (built with the tests) as a child process, its stdout in a file.
enum HarnessProcess {
  static let binary = LoggedChild.builtExecutable(named: "HaulManagerHarness")

  static func start(_ arguments: [String]) throws -> LoggedChild {
    guard let binary else {
      throw CocoaError(
        .fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "HaulManagerHarness was not built"])
    }
    return try LoggedChild(binary, arguments)
  }
}

@Suite("manager crash trials", .timeLimit(.minutes(3)))
struct ManagerCrashTests {
  /// Bytes held in `directory` by every interrupted download, from the state files.
  static func held(_ directory: URL) -> [String: Int64] {
    Dictionary(SavedProgress.all(in: directory).map { ($0.file.lastPathComponent, $0.bytes) }) { a, _ in a }
  }

  @Test func killedRunnersLoseNoDownloadAndTheNextLaunchFinishesEveryFileExactly() async throws {
    let fixture = try ManagerFixture()
    let names = (1...6).map { "k\($0).bin" }
    // The first four files' first response stalls at 200 kB, their second at 200 kB more: the
    // kills land mid-download however slow the machine is (the last two wait in the queue).
    // Slow enough that checkpoints (every 0.25 s, while bytes arrive) make some of it durable.
    let bodies = names.enumerated().map {
      fixture.serve(
        "/\($0.element)", size: 1_200_000, seed: 60 + UInt64($0.offset), bytesPerSecond: 400_000,
        stallAfter: $0.offset < 4 ? 200_000 : nil, stallTimes: 2)
    }
    let urls = names.map { fixture.server.url("/\($0)") }
    let arguments = ["child", fixture.catalog.path, fixture.downloads.path, "4"]

    let first = try HarnessProcess.start(arguments + urls)
    let added = try #require(await first.line("added"), "the child did not add: \(first.stderr)")
    let ids = added.split(separator: " ").dropFirst().compactMap { DownloadID(String($0)) }
    #expect(ids.count == 6)
    // Killed while four downloads run, each with some bytes on disk.
    #expect(await eventually { Self.held(fixture.downloads).values.count { $0 > 0 } == 4 })
    #expect(await first.kill(), "\(first.stderr)")

    // A second runner continues them, and is killed too once they have grown.
    let second = try HarnessProcess.start(arguments)
    let before = Self.held(fixture.downloads)
    #expect(await eventually { Self.held(fixture.downloads).count { $0.value > before[$0.key] ?? 0 } == 4 })
    #expect(await second.kill(), "\(second.stderr)")

    let requests = fixture.server.requests.count
    let held = Self.held(fixture.downloads)
    var read: [DownloadSnapshot] = []
    try DownloadManager.read(catalog: fixture.catalog) { read.append($0) }
    #expect(read.map(\.id) == ids && read.allSatisfy { $0.state == .queued }, "nobody runs them any more")
    #expect(read.map(\.bytes) == ids.indices.map { held[names[$0]] ?? 0 })
    do {
      let manager = try fixture.open(launch: .hold)
      let listed = manager.downloads()
      #expect(listed.map(\.id) == ids, "every download listed once, in order")
      for download in listed {
        let name = try #require(
          download.file?.lastPathComponent ?? names.first { download.url.hasSuffix($0) })
        #expect(download.state == .queued, "\(name) was running")
        #expect(download.bytes == held[name] ?? 0, "\(name): listed as its state file says")
        if held[name] != nil { #expect(download.totalBytes == 1_200_000) }
      }
      #expect(listed.map { $0.bytes > 0 } == [true, true, true, true, false, false])
      await manager.close()
    }
    #expect(fixture.server.requests.count == requests, "listing used no network")

    let manager = try fixture.open(limit: 4)
    #expect(await idle(manager, seconds: 90))
    for (name, body) in zip(names, bodies) {
      let exact = fixture.contents(name) == body
      #expect(exact, "\(name) differs")
      #expect(!fixture.exists(name + ".part") && !fixture.exists(name + ".haul"))
    }
    #expect(manager.downloads().allSatisfy { $0.state == .complete })
    for (name, bytes) in held where bytes > 0 {
      let ranges = fixture.server.requests(for: "/\(name)").compactMap { $0.header("Range") }
      #expect(!ranges.isEmpty, "\(name) was resumed, not fetched again")
    }
    await manager.close()
  }

  @Test func anotherProcessThatHoldsTheCatalogIsNamedByItsPid() async throws {
    let fixture = try ManagerFixture()
    let holder = try HarnessProcess.start(["hold", fixture.catalog.path])
    #expect(await holder.line("holding") != nil, "\(holder.stderr)")
    let error = #expect(throws: HaulError.self) { _ = try fixture.open() }
    #expect(
      error?.message.contains("in use by process \(holder.pid) (HaulManagerHarn") == true,
      "\(String(describing: error))")
    #expect(error?.hint?.contains("kill \(holder.pid)") == true)
    #expect(await holder.kill())
    let manager = try fixture.open()
    await manager.close()
  }
}
