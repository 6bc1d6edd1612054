import FleetTestSupport
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// `DownloadManager` with its catalog on the fleet queue (`PostgresCatalog`).
@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct PostgresCatalogTests {
  private func serve(_ server: TestServer, _ count: Int, size: Int = 150_000, rate: Int? = nil) -> [[UInt8]] {
    (0..<count).map { index in
      let body = TestResource.random(size: size + index, seed: UInt64(50 + index))
      var faults = TestFaults()
      faults.bytesPerSecond = rate
      server.setResource("/m\(index).bin", TestResource(body: body, etag: "\"m\(index)\"", faults: faults))
      return body
    }
  }

  @Test func aManagerOnTheQueueRunsItsDownloadsAndRecordsThemThere() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let bodies = serve(server, 3)
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    try FileManager.default.createDirectory(at: base.file("sub"), withIntermediateDirectories: true)
    let manager = try DownloadManager(queue: address, baseDirectory: base.url)
    let log = EventLog(manager)
    var ids: [DownloadID] = []
    for index in 0..<3 {
      ids.append(
        try await manager.add(
          server.url("/m\(index).bin"), to: .directory(base.url.appendingPathComponent("sub"))))
    }
    for id in ids { #expect(await log.wait("completed", id)) }
    #expect(await idle(manager))
    await manager.close()
    for (index, body) in bodies.enumerated() {
      #expect(try Data(contentsOf: base.file("sub/m\(index).bin")) == Data(body))
    }
    // The queue has them, with the paths relative to the base, as workers read them.
    let queue = try await FleetQueue(address)
    let jobs = try await queue.jobs()
    #expect(jobs.map(\.id) == ids.map(\.description))
    #expect(jobs.allSatisfy { $0.state == .complete && $0.sha256 != nil })
    #expect(jobs.map(\.file) == ["sub/m0.bin", "sub/m1.bin", "sub/m2.bin"])
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func aRelaunchedManagerListsWhatTheQueueHolds() async throws {
    let server = try TestServer()
    defer { server.stop() }
    // Far longer than the test takes, however loaded the machine (the downloads must not end).
    _ = serve(server, 2, size: 2_000_000, rate: 50_000)
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    var first: DownloadManager? = try DownloadManager(queue: address, baseDirectory: base.url)
    let log = EventLog(try #require(first))
    let running = try await first?.add(server.url("/m0.bin"), to: .directory(base.url))
    let paused = try await first?.add(server.url("/m1.bin"), to: .directory(base.url), paused: true)
    let id = try #require(running)
    #expect(await log.wait { if case .progress(id, let p) = $0 { p.bytes > 0 } else { false } })
    await first?.close()
    first = nil
    var configuration = DownloadManager.Configuration()
    configuration.launch = .pause
    let second = try DownloadManager(queue: address, baseDirectory: base.url, configuration: configuration)
    let listed = second.downloads()
    #expect(listed.map(\.id) == [id, try #require(paused)])
    #expect(listed.map(\.state) == [.paused, .paused])
    #expect(listed[0].bytes > 0, "\(listed[0]), events: \(log.all)")
    #expect(listed[0].file?.path == base.file("m0.bin").path)
    await second.close()
    let queue = try await FleetQueue(address)
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func aPauseFromAnotherHostReachesTheManagersDownload() async throws {
    let server = try TestServer()
    defer { server.stop() }
    _ = serve(server, 1, size: 2_000_000, rate: 50_000)
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    let manager = try DownloadManager(queue: address, baseDirectory: base.url, leaseSeconds: 4)
    let log = EventLog(manager)
    let id = try await manager.add(server.url("/m0.bin"), to: .directory(base.url))
    #expect(await log.wait { if case .progress(id, let p) = $0 { p.bytes > 0 } else { false } })
    let elsewhere = try await FleetQueue(address)
    #expect(try await elsewhere.pause([id.description]) == [id.description])
    #expect(await log.wait("paused", id))
    #expect(
      await eventually {
        (try? FileManager.default.attributesOfItem(atPath: base.file("m0.bin.part").path)) != nil
      })
    let job = try #require(try await elsewhere.jobs([id.description]).first)
    #expect(await eventually { manager.download(id)?.state == .paused })
    #expect(job.pendingRequest == "pause" || job.state == .paused)
    await manager.close()
    #expect(try await elsewhere.jobs([id.description]).first?.state == .paused)
    #expect(try await FleetTestDatabase.countersAgree(elsewhere))
  }

  @Test func aManagerAndAWorkerShareTheQueue() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let bodies = serve(server, 8, size: 300_000, rate: 600_000)
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    var configuration = DownloadManager.Configuration()
    configuration.maxConcurrentDownloads = 2
    let manager = try DownloadManager(queue: address, baseDirectory: base.url, configuration: configuration)
    let log = EventLog(manager)
    var ids: [DownloadID] = []
    for index in 0..<8 {
      ids.append(try await manager.add(server.url("/m\(index).bin"), to: .directory(base.url)))
    }
    var workerConfiguration = FleetWorker.Configuration(name: "worker", baseDirectory: base.url)
    workerConfiguration.exitWhenIdle = true
    workerConfiguration.idlePollInterval = 0.2
    let worker = try FleetWorker(queue: try await FleetQueue(address), configuration: workerConfiguration)
    let summary = try await worker.bounded()
    #expect(
      await eventually {
        log.all.count { if case .completed = $0 { true } else { false } } == 8 - summary.completed
      })
    await manager.close()
    let queue = try await FleetQueue(address)
    let jobs = try await queue.jobs()
    #expect(jobs.allSatisfy { $0.state == .complete })
    #expect(summary.completed >= 1)
    for (index, body) in bodies.enumerated() {
      #expect(try Data(contentsOf: base.file("m\(index).bin")) == Data(body))
    }
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func aPausedDownloadKeepsItsBytesInTheQueueAndResumesFromThem() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let bodies = serve(server, 1, size: 1_500_000, rate: 50_000)
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    let manager = try DownloadManager(queue: address, baseDirectory: base.url)
    let log = EventLog(manager)
    let id = try await manager.add(server.url("/m0.bin"), to: .directory(base.url))
    // Received bytes: a stop writes the bytes still staged before it records the state.
    #expect(await log.wait { if case .progress(id, let p) = $0 { p.bytes > 0 } else { false } })
    try await manager.pause(id)
    #expect(await log.wait("paused", id))
    let queue = try await FleetQueue(address)
    let paused = try #require(try await queue.jobs([id.description]).first)
    #expect(
      paused.state == .paused && paused.pendingRequest == nil && paused.bytes > 0,
      "\(paused), events: \(log.all)")
    #expect(try await FleetTestDatabase.countersAgree(queue))
    server.updateFaults("/m0.bin") { $0.bytesPerSecond = nil }
    try await manager.resume(id)
    #expect(await log.wait("completed", id))
    #expect(await idle(manager))
    await manager.close()
    #expect(try Data(contentsOf: base.file("m0.bin")) == Data(bodies[0]))
    // The second run asked for the rest only.
    let ranges = server.requests(for: "/m0.bin").compactMap { $0.headers["Range"] }
    #expect(ranges.contains { $0.hasPrefix("bytes=") && !$0.hasPrefix("bytes=0-") })
    #expect(try await queue.jobs([id.description]).first?.state == .complete)
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func twoManagersOnOneQueueNeverRunTheSameDownload() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let bodies = serve(server, 8, size: 400_000, rate: 400_000)
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    var configuration = DownloadManager.Configuration()
    configuration.maxConcurrentDownloads = 2
    let managers = [
      try DownloadManager(
        queue: address, baseDirectory: base.url, leaseSeconds: 4, configuration: configuration),
      try DownloadManager(
        queue: address, baseDirectory: base.url, leaseSeconds: 4, configuration: configuration),
    ]
    let logs = managers.map(EventLog.init)
    var ids: [DownloadID] = []
    for index in 0..<8 {
      ids.append(try await managers[index % 2].add(server.url("/m\(index).bin"), to: .directory(base.url)))
    }
    let queue = try await FleetQueue(address)
    var done = false
    for _ in 0..<600 where !done {
      done = try await queue.jobs().allSatisfy { $0.state == .complete }
      if !done { try await Task.sleep(for: .milliseconds(100)) }
    }
    #expect(done)
    // Each manager learns what the other finished, and is then idle.
    for manager in managers {
      #expect(await eventually { manager.downloads().allSatisfy { $0.state == .complete } })
      #expect(await idle(manager))
      await manager.close()
    }
    let started = logs.map { log in log.all.compactMap { if case .started(let id) = $0 { id } else { nil } } }
    #expect(Set(started[0]).isDisjoint(with: started[1]))
    #expect(started[0].count + started[1].count == 8)
    #expect(Set(started[0] + started[1]) == Set(ids))
    for (index, body) in bodies.enumerated() {
      #expect(try Data(contentsOf: base.file("m\(index).bin")) == Data(body))
      #expect(server.requests(for: "/m\(index).bin").filter { $0.method == "GET" }.count == 1)
    }
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func secretsAndPathsOutsideTheBaseAreRefused() async throws {
    let address = try PostgresAddress(FleetTestDatabase.url())
    let base = try TemporaryDirectory()
    let manager = try DownloadManager(queue: address, baseDirectory: base.url)
    var options = DownloadOptions()
    options.headers = [("Authorization", "Bearer secret")]
    await #expect(throws: HaulError.self) {
      try await manager.add("http://127.0.0.1:1/a", to: .directory(base.url), options: options)
    }
    await #expect(throws: HaulError.self) {
      try await manager.add("http://user:pw@127.0.0.1:1/a", to: .directory(base.url))
    }
    let outside = try TemporaryDirectory()
    do {
      try await manager.add("http://127.0.0.1:1/a", to: .directory(outside.url), paused: true)
      Issue.record("a directory outside the base was accepted")
    } catch {
      #expect(error.message.contains("outside"))
    }
    #expect(manager.downloads().isEmpty)
    await manager.close()
    #expect(try await FleetQueue(address).jobs().isEmpty)
  }
}
