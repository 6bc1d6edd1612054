import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// The manager end to end against the in-process test server.
@Suite("download manager", .timeLimit(.minutes(3)))
struct DownloadManagerTests {
  static func oneConnection() -> DownloadOptions {
    var options = DownloadOptions()
    options.connections = 1
    return options
  }

  /// The most downloads active at once, from the events.
  static func mostActive(_ events: [DownloadManagerEvent]) -> Int {
    var active = 0
    var most = 0
    for event in events {
      switch event {
      case .started: active += 1
      case .completed, .failed, .paused, .removed: active -= 1
      default: break
      }
      most = max(most, active)
    }
    return most
  }

  @Test func addedDownloadsRunToTheEndInQueueOrderUnderTheLimit() async throws {
    let fixture = try ManagerFixture()
    let bodies = (1...3).map {
      fixture.serve("/f\($0).bin", size: 200_000 * $0, seed: UInt64($0), bytesPerSecond: 2_000_000)
    }
    let manager = try fixture.open(limit: 2)
    let log = EventLog(manager)
    let ids = try await manager.add(
      (1...3).map {
        DownloadRequest(url: fixture.server.url("/f\($0).bin"), to: .directory(fixture.downloads))
      })
    #expect(
      Set(ids).count == 3 && ids.allSatisfy { DownloadID($0.description) == $0 && $0.description.count == 16 }
    )
    #expect(await idle(manager))
    for (index, id) in ids.enumerated() {
      let snapshot = try #require(manager.download(id))
      #expect(snapshot.state == .complete && snapshot.error == nil)
      #expect(snapshot.bytes == Int64(bodies[index].count) && snapshot.totalBytes == snapshot.bytes)
      #expect(snapshot.fraction == 1 && snapshot.sha256?.count == 64 && snapshot.finishedAt != nil)
      #expect(snapshot.file == fixture.file("f\(index + 1).bin"))
      let exact = fixture.contents("f\(index + 1).bin") == bodies[index]
      #expect(exact, "f\(index + 1).bin differs")
      #expect(log.names(id) == ["added", "started", "responded", "completed"])
    }
    let started = log.all.compactMap { if case .started(let id) = $0 { id } else { nil } }
    #expect(started == ids, "queue order")
    #expect(Self.mostActive(log.all) <= 2)
    #expect(manager.statistics.stopped == 3 && manager.statistics.active == 0)
    await manager.close()
  }

  @Test func pauseKeepsTheBytesAndResumeContinuesFromThem() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/big.bin", size: 1_500_000, seed: 7, stallAfter: 300_000)
    let manager = try fixture.open()
    let log = EventLog(manager)
    let id = try await manager.add(
      fixture.server.url("/big.bin"), to: .file(fixture.file("big.bin")), options: Self.oneConnection())
    #expect(await log.wait { if case .progress(id, let p) = $0 { p.bytes >= 300_000 } else { false } })
    try await manager.pause(id)
    #expect(manager.download(id)?.state == .paused)
    #expect(await log.wait("paused", id))
    let held = try #require(manager.download(id)).bytes
    #expect(held == 300_000, "what the server sent before it stalled")
    #expect(SavedProgress.load(for: fixture.file("big.bin"))?.bytes == held, "listed as the state file says")
    let requests = fixture.server.requests(for: "/big.bin").count
    try await Task.sleep(for: .milliseconds(300))
    #expect(fixture.server.requests(for: "/big.bin").count == requests, "nothing is fetched while paused")
    try await manager.resume(id)
    #expect(await idle(manager))
    let exact = fixture.contents("big.bin") == body
    #expect(exact)
    #expect(fixture.server.requests(for: "/big.bin").last?.header("Range") == "bytes=\(held)-")
    #expect(
      log.names(id) == [
        "added", "started", "responded", "paused", "queued", "started", "responded", "completed",
      ])
    await manager.close()
  }

  /// A download resumed at launch may start and finish before the caller subscribes: the first
  /// subscription still sees it (`haul run --json` once printed no `started` line for one).
  @Test func theFirstSubscriptionSeesWhatTheLaunchStarted() async throws {
    let fixture = try ManagerFixture()
    fixture.serve("/l.bin", size: 50_000, seed: 8)
    var id = DownloadID.placeholder
    do {
      let manager = try fixture.open(launch: .hold)
      id = try await manager.add(fixture.server.url("/l.bin"), to: .directory(fixture.downloads))
      await manager.close()
    }
    let manager = try fixture.open(launch: .resume)
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .complete)
    let log = EventLog(manager)
    #expect(await log.wait("completed", id))
    #expect(log.names(id) == ["started", "responded", "completed"])
    let later = EventLog(manager)
    try await Task.sleep(for: .milliseconds(100))
    #expect(later.all.isEmpty, "a later subscription begins when it is made")
    await manager.close()
  }

  /// An `.added` event says where the download waits, as `download(id)` does.
  @Test func addedEventsCarryTheirPlaceInTheQueue() async throws {
    let fixture = try ManagerFixture()
    let manager = try fixture.open()
    let events = manager.events()
    let first = try await manager.add(
      fixture.server.url("/a"), to: .directory(fixture.downloads), paused: true)
    let more = try await manager.add(
      [
        DownloadRequest(url: fixture.server.url("/b"), to: .directory(fixture.downloads)),
        DownloadRequest(url: fixture.server.url("/c"), to: .directory(fixture.downloads)),
      ], at: .front, paused: true)
    var places: [DownloadID: Int?] = [:]
    for await event in events {
      if case .added(let snapshot) = event { places[snapshot.id] = snapshot.queueIndex }
      if places.count == 3 { break }
    }
    #expect(places[first] == 0, "alone in the queue when added")
    #expect(places[more[0]] == 0 && places[more[1]] == 1, "\(places)")
    #expect(manager.download(first)?.queueIndex == 2)
    await manager.close()
  }

  @Test func aPausedDownloadStaysPausedAcrossLaunches() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/a.bin", size: 100_000, seed: 3)
    var id = DownloadID.placeholder
    do {
      let manager = try fixture.open()
      id = try await manager.add(
        fixture.server.url("/a.bin"), to: .directory(fixture.downloads), paused: true)
      await manager.close()
    }
    let manager = try fixture.open(launch: .resume)
    #expect(manager.download(id)?.state == .paused && manager.download(id)?.queueIndex == 0)
    try await Task.sleep(for: .milliseconds(200))
    #expect(await idle(manager, seconds: 60))
    #expect(fixture.server.requests.isEmpty, "a paused download does not start at launch")
    try await manager.resume(id)
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .complete)
    let exact = fixture.contents("a.bin") == body
    #expect(exact)
    await manager.close()
  }

  @Test func aRelaunchListsWhatEachDownloadHoldsBeforeTheNetworkIsUsed() async throws {
    let fixture = try ManagerFixture()
    let bodies = (1...2).map {
      fixture.serve("/r\($0).bin", size: 1_000_000, seed: 40 + UInt64($0), stallAfter: 200_000)
    }
    var ids: [DownloadID] = []
    do {
      let manager = try fixture.open()
      let log = EventLog(manager)
      ids = try await manager.add(
        (1...2).map {
          DownloadRequest(
            url: fixture.server.url("/r\($0).bin"), to: .directory(fixture.downloads),
            options: Self.oneConnection())
        })
      for id in ids {
        #expect(await log.wait { if case .progress(id, let p) = $0 { p.bytes >= 200_000 } else { false } })
      }
      await manager.close()
    }
    let requests = fixture.server.requests.count
    do {
      let manager = try fixture.open(launch: .hold)
      for (index, id) in ids.enumerated() {
        let snapshot = try #require(manager.download(id))
        let saved = try #require(SavedProgress.load(for: fixture.file("r\(index + 1).bin")))
        #expect(snapshot.state == .queued && snapshot.queueIndex == index)
        #expect(snapshot.bytes == saved.bytes && snapshot.bytes == 200_000)
        #expect(snapshot.totalBytes == 1_000_000 && snapshot.file == fixture.file("r\(index + 1).bin"))
      }
      await manager.close()
    }
    #expect(fixture.server.requests.count == requests, "listing used no network")
    let manager = try fixture.open()
    #expect(await idle(manager))
    for index in 0..<2 {
      let exact = fixture.contents("r\(index + 1).bin") == bodies[index]
      #expect(exact)
      #expect(
        fixture.server.requests(for: "/r\(index + 1).bin").last?.header("Range")?.hasPrefix("bytes=") == true)
    }
    await manager.close()
  }

  @Test func thePauseLaunchPolicyPausesWhatWasRunning() async throws {
    let fixture = try ManagerFixture()
    fixture.serve("/p.bin", size: 1_000_000, seed: 5, stallAfter: 100_000)
    var id = DownloadID.placeholder
    do {
      let manager = try fixture.open()
      let log = EventLog(manager)
      id = try await manager.add(fixture.server.url("/p.bin"), to: .directory(fixture.downloads))
      #expect(await log.wait("responded", id))
      await manager.close()
    }
    let manager = try fixture.open(launch: .pause)
    #expect(manager.download(id)?.state == .paused)
    #expect(await idle(manager, seconds: 60))
    try await manager.resumeAll()
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .complete)
    await manager.close()
  }

  @Test func theQueueRunsInTheOrderItWasMovedTo() async throws {
    let fixture = try ManagerFixture()
    fixture.serve("/A", size: 300_000, seed: 11, stallAfter: 1000)
    for name in ["B", "C", "D"] { fixture.serve("/\(name)", size: 20_000, seed: 12) }
    let manager = try fixture.open(limit: 1)
    let log = EventLog(manager)
    let ids = try await manager.add(
      ["A", "B", "C", "D"].map {
        DownloadRequest(url: fixture.server.url("/\($0)"), to: .directory(fixture.downloads))
      })
    #expect(await log.wait("responded", ids[0]))
    #expect(try await manager.move(ids[3], to: .front) == 0)
    #expect(try await manager.move(ids[1], to: .end) == 2)
    let waiting = manager.downloads().filter { $0.queueIndex != nil }.sorted {
      $0.queueIndex ?? 0 < $1.queueIndex ?? 0
    }
    #expect(waiting.map(\.id) == [ids[3], ids[2], ids[1]], "listed with their places in the queue")
    // A (stalled by the server) gives its slot up; the queue runs in its new order, then A again.
    try await manager.pause(ids[0])
    #expect(await idle(manager))
    try await manager.resume(ids[0])
    #expect(await idle(manager))
    let started = log.all.compactMap { if case .started(let id) = $0 { id } else { nil } }
    #expect(started == [ids[0], ids[3], ids[2], ids[1], ids[0]])
    #expect(manager.downloads().allSatisfy { $0.state == .complete })
    #expect(Self.mostActive(log.all) == 1)
    await #expect(throws: HaulError.self) { try await manager.move(ids[0], to: .front) }
    await manager.close()
  }

  @Test func theLimitsChangeWhileDownloadsRun() async throws {
    let fixture = try ManagerFixture()
    for index in 1...3 {
      fixture.serve("/l\(index)", size: 1_500_000, seed: 20 + UInt64(index), bytesPerSecond: 1_000_000)
    }
    let manager = try fixture.open(limit: 1, rate: 100_000)
    let log = EventLog(manager)
    let ids = try await manager.add(
      (1...3).map {
        DownloadRequest(
          url: fixture.server.url("/l\($0)"), to: .directory(fixture.downloads), options: Self.oneConnection()
        )
      })
    #expect(await log.wait("started", ids[0]))
    try await manager.setMaxConcurrentDownloads(3)
    #expect(await log.wait("started", ids[1]))
    #expect(await log.wait("started", ids[2]))
    #expect(manager.maxConcurrentDownloads == 3 && manager.statistics.active == 3)
    // Three downloads share 100 kB/s, against 3 MB/s unlimited: what they receive over a
    // measured second or more stays near the limit. (A slow machine only lowers the rate.)
    let clock = ContinuousClock()
    let start = (clock.now, manager.downloads().reduce(0) { $0 + $1.bytes })
    try await Task.sleep(for: .seconds(1))
    let end = (clock.now, manager.downloads().reduce(0) { $0 + $1.bytes })
    let elapsed =
      Double((end.0 - start.0).components.seconds) + Double((end.0 - start.0).components.attoseconds) / 1e18
    let rate = Double(end.1 - start.1) / elapsed
    #expect(rate < 300_000, "\(rate) bytes/s under a 100 kB/s limit")
    #expect(manager.statistics.overallRateLimit == 100_000)
    try manager.setOverallRateLimit(nil)
    #expect(await idle(manager))
    #expect(manager.downloads().allSatisfy { $0.state == .complete })
    await #expect(throws: HaulError.self) { try await manager.setMaxConcurrentDownloads(0) }
    #expect(throws: HaulError.self) { try manager.setOverallRateLimit(0) }
    await manager.close()
  }

  @Test func cancelRemoveAndForgetTheirFiles() async throws {
    let fixture = try ManagerFixture()
    fixture.serve("/big", size: 2_000_000, seed: 30, stallAfter: 100_000)
    for name in ["keep", "drop"] { fixture.serve("/\(name)", size: 50_000, seed: 31) }
    let manager = try fixture.open()
    let log = EventLog(manager)
    let big = try await manager.add(
      fixture.server.url("/big"), to: .directory(fixture.downloads), options: Self.oneConnection())
    let keep = try await manager.add(fixture.server.url("/keep"), to: .directory(fixture.downloads))
    let drop = try await manager.add(fixture.server.url("/drop"), to: .directory(fixture.downloads))
    #expect(await log.wait { if case .progress(big, let p) = $0 { p.bytes >= 100_000 } else { false } })
    // The state file comes with the first checkpoint, a moment after the bytes.
    #expect(await eventually { fixture.exists("big.part") && fixture.exists("big.haul") })
    try await manager.cancel(big, deletingFiles: true)
    #expect(await log.wait("removed", big))
    #expect(manager.download(big)?.state == .removed)
    #expect(!fixture.exists("big.part") && !fixture.exists("big.haul"), "the partial files are gone")
    #expect(await log.wait("completed", keep))
    #expect(await log.wait("completed", drop))
    await #expect(throws: HaulError.self) { try await manager.cancel(keep) }
    try await manager.remove(keep)
    try await manager.remove(drop, deletingFiles: true)
    #expect(manager.download(keep) == nil && manager.download(drop) == nil)
    #expect(fixture.exists("keep") && !fixture.exists("drop"))
    #expect(log.names(keep).last == "forgotten")
    #expect(try await manager.forgetFinished() == 1)
    #expect(manager.downloads().isEmpty)
    await manager.close()
  }

  @Test func aFinishedFileDeletedBehindTheManagersBackIsReportedAndFetchedAgain() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/gone.bin", size: 80_000, seed: 33)
    var id = DownloadID.placeholder
    do {
      let manager = try fixture.open()
      id = try await manager.add(fixture.server.url("/gone.bin"), to: .directory(fixture.downloads))
      #expect(await idle(manager))
      await manager.close()
    }
    try FileManager.default.removeItem(at: fixture.file("gone.bin"))
    let manager = try fixture.open()
    let snapshot = try #require(manager.download(id))
    #expect(snapshot.state == .failed)
    #expect(
      snapshot.error?.message.contains("deleted or moved") == true, "\(String(describing: snapshot.error))")
    try await manager.resume(id)
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .complete)
    let exact = fixture.contents("gone.bin") == body
    #expect(exact)
    await manager.close()
  }

  @Test func aFailureStopsOnlyThatDownload() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/ok", size: 30_000, seed: 34)
    let manager = try fixture.open(limit: 1)
    let ids = try await manager.add(
      ["/missing", "/ok"].map {
        DownloadRequest(url: fixture.server.url($0), to: .directory(fixture.downloads))
      })
    #expect(await idle(manager))
    let failed = try #require(manager.download(ids[0]))
    #expect(failed.state == .failed && failed.error?.category == .server, "\(failed)")
    #expect(manager.download(ids[1])?.state == .complete)
    fixture.serve("/missing", size: 1000, seed: 35)
    try await manager.resume(ids[0])
    #expect(await idle(manager))
    #expect(manager.download(ids[0])?.state == .complete)
    _ = body
    await manager.close()
  }

  @Test func eachSubscriberGetsEveryEvent() async throws {
    let fixture = try ManagerFixture()
    fixture.serve("/e", size: 60_000, seed: 36)
    let manager = try fixture.open()
    let first = EventLog(manager)
    let second = EventLog(manager)
    let id = try await manager.add(fixture.server.url("/e"), to: .directory(fixture.downloads))
    #expect(await first.wait("completed", id))
    #expect(await second.wait("completed", id))
    #expect(first.all.map(EventLog.name) == second.all.map(EventLog.name))
    #expect(first.names(id) == ["added", "started", "responded", "completed"])
    await manager.close()
    let ended = manager.events()
    var count = 0
    for await _ in ended { count += 1 }
    #expect(count == 0, "a closed manager's streams end at once")
  }

  @Test func oneManagerPerCatalog() async throws {
    let fixture = try ManagerFixture()
    let manager = try fixture.open()
    let error = #expect(throws: HaulError.self) { _ = try fixture.open() }
    #expect(error?.message.contains("already open in this process") == true)
    await manager.close()
    await #expect(throws: HaulError.self) { try await manager.pauseAll() }
    let again = try fixture.open()
    await again.close()
  }

  @Test func aCatalogIsReadWhileAnotherManagerOwnsIt() async throws {
    let fixture = try ManagerFixture()
    var none = 0
    try DownloadManager.read(catalog: fixture.catalog) { _ in none += 1 }
    #expect(none == 0 && !FileManager.default.fileExists(atPath: fixture.catalog.path), "nothing is created")
    fixture.serve("/s", size: 1_000_000, seed: 39, stallAfter: 300_000)
    fixture.serve("/done", size: 10_000, seed: 40)
    let manager = try fixture.open(limit: 1)
    let log = EventLog(manager)
    let done = try await manager.add(fixture.server.url("/done"), to: .directory(fixture.downloads))
    #expect(await log.wait("completed", done))
    let running = try await manager.add(
      fixture.server.url("/s"), to: .directory(fixture.downloads), options: Self.oneConnection())
    let waiting = try await manager.add(
      fixture.server.url("/w"), to: .directory(fixture.downloads), paused: true)
    #expect(await log.wait { if case .progress(running, let p) = $0 { p.bytes >= 300_000 } else { false } })
    // The owner records its numbers a few times a second.
    #expect(
      await eventually {
        var bytes: Int64 = 0
        try? DownloadManager.read(catalog: fixture.catalog) { if $0.id == running { bytes = $0.bytes } }
        return bytes >= 300_000
      })
    var read: [DownloadSnapshot] = []
    try DownloadManager.read(catalog: fixture.catalog) { read.append($0) }
    #expect(read.map(\.id) == [done, running, waiting])
    #expect(read.map(\.state) == [.complete, .active, .paused])
    #expect(read[1].totalBytes == 1_000_000 && read[1].file == fixture.file("s"))
    #expect(read[2].queueIndex == 0 && read[0].sha256?.count == 64)
    await manager.close()
    let foreign = fixture.directory.file("foreign.sqlite")
    try Data("not a catalog".utf8).write(to: foreign)
    #expect(throws: HaulError.self) { try DownloadManager.read(catalog: foreign) { _ in } }
    #expect(FileManager.default.contents(atPath: foreign.path) == Data("not a catalog".utf8))
  }

  @Test func badInputIsRefusedAndAddsNothing() async throws {
    let fixture = try ManagerFixture()
    let manager = try fixture.open(launch: .hold)
    let good = DownloadRequest(url: fixture.server.url("/x"), to: .directory(fixture.downloads))
    let cases: [(DownloadRequest, String)] = [
      (DownloadRequest(url: "gopher://h/x", to: .directory(fixture.downloads)), "unsupported URL scheme"),
      (
        DownloadRequest(url: fixture.server.url("/y"), to: .directory(fixture.file("nope"))), "does not exist"
      ),
      (good, "already in the catalog"),
    ]
    _ = try await manager.add([good])
    for (request, words) in cases {
      let error = await #expect(throws: HaulError.self) {
        try await manager.add([good.withURL("/z", fixture), request])
      }
      #expect(error?.message.contains(words) == true, "\(String(describing: error))")
    }
    var options = DownloadOptions()
    options.connections = 99
    await #expect(throws: HaulError.self) {
      try await manager.add(fixture.server.url("/w"), to: .directory(fixture.downloads), options: options)
    }
    #expect(manager.downloads().count == 1, "a refused batch adds nothing")
    await manager.close()
  }

  /// Whether the bytes held survive a new URL is the engine's identity check; the manager's part
  /// is that the next run uses the new URL.
  @Test func theNextRunUsesANewURL() async throws {
    let fixture = try ManagerFixture()
    let body = fixture.serve("/new", size: 120_000, seed: 37)
    let manager = try fixture.open()
    let id = try await manager.add(fixture.server.url("/old"), to: .file(fixture.file("same.bin")))
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .failed, "the old URL answers 404")
    await #expect(throws: HaulError.self) { try await manager.changeURL(id, to: "not a url") }
    try await manager.changeURL(id, to: fixture.server.url("/new"))
    #expect(manager.download(id)?.url == fixture.server.url("/new"))
    #expect(manager.download(id)?.state == .failed, "a new URL alone does not restart a stopped download")
    try await manager.resume(id)
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .complete)
    let exact = fixture.contents("same.bin") == body
    #expect(exact)
    #expect(fixture.server.requests(for: "/new").count == 1)
    await manager.close()
  }

  @Test func newOptionsRestartARunningDownloadWithThem() async throws {
    let fixture = try ManagerFixture()
    fixture.serve("/o", size: 1_000_000, seed: 38, stallAfter: 100_000)
    let manager = try fixture.open()
    let log = EventLog(manager)
    let id = try await manager.add(
      fixture.server.url("/o"), to: .directory(fixture.downloads), options: Self.oneConnection())
    #expect(await log.wait("responded", id))
    var options = Self.oneConnection()
    options.userAgent = "changed-agent/1"
    try await manager.changeOptions(id, to: options)
    #expect(try manager.options(of: id).options.userAgent == "changed-agent/1")
    #expect(await idle(manager))
    #expect(manager.download(id)?.state == .complete)
    #expect(fixture.server.requests(for: "/o").last?.header("User-Agent") == "changed-agent/1")
    #expect(log.names(id).contains("queued"), "it was restarted: \(log.names(id))")
    await manager.close()
  }
}

extension DownloadRequest {
  func withURL(_ path: String, _ fixture: ManagerFixture) -> DownloadRequest {
    DownloadRequest(url: fixture.server.url(path), to: destination, options: options)
  }
}
