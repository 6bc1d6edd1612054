import FleetTestSupport
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// Workers in this process against the test process's PostgreSQL and an in-process HTTP server.
@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct FleetWorkerTests {
  /// Collects a worker's events so that a test can wait for one (a generous deadline only bounds a hang).
  final class Recorder: Sendable {
    private let events = Locked<[FleetWorkerEvent]>([])
    let task: Task<Void, Never>

    init(_ worker: FleetWorker) {
      let events = self.events
      task = Task { for await event in worker.events { events.withLock { $0.append(event) } } }
    }

    var all: [FleetWorkerEvent] { events.withLock { $0 } }

    func waitFor(
      line: Int = #line, _ match: @escaping @Sendable (FleetWorkerEvent) -> Bool
    ) async throws -> FleetWorkerEvent {
      let deadline = ContinuousClock.now + .seconds(120)
      while ContinuousClock.now < deadline {
        if let event = events.withLock({ $0.first(where: match) }) { return event }
        try await Task.sleep(for: .milliseconds(20))
      }
      throw TimeoutError(line: line, seen: all)
    }
  }

  /// Which wait ran out, and every event the worker had sent by then.
  struct TimeoutError: Error, CustomStringConvertible {
    let line: Int
    let seen: [FleetWorkerEvent]
    var description: String {
      "the wait on line \(line) saw no matching event in 120 s; events:\n"
        + seen.map { "  \($0)" }.joined(separator: "\n")
    }
  }

  private func worker(
    _ queue: FleetQueue, _ directory: TemporaryDirectory, name: String = "w", concurrency: Int = 2,
    lease: Double = 30, exitWhenIdle: Bool = true
  ) throws -> FleetWorker {
    var configuration = FleetWorker.Configuration(name: name, baseDirectory: directory.url)
    configuration.concurrency = concurrency
    configuration.leaseSeconds = lease
    configuration.progressInterval = 0.2
    configuration.idlePollInterval = 0.2
    configuration.maintenanceInterval = 0.3
    configuration.exitWhenIdle = exitWhenIdle
    return try FleetWorker(queue: queue, configuration: configuration)
  }

  private static func isStarted(_ id: String) -> @Sendable (FleetWorkerEvent) -> Bool {
    { if case .progress(let got, let p) = $0 { got == id && p.bytes > 0 } else { false } }
  }

  @Test func drainsTheQueueWithExactFilesAndRecordsEachResult() async throws {
    let server = try TestServer()
    defer { server.stop() }
    var bodies: [[UInt8]] = []
    for index in 0..<5 {
      let body = TestResource.random(size: 200_000 + index * 1000, seed: UInt64(index))
      bodies.append(body)
      server.setResource("/f\(index).bin", TestResource(body: body, etag: "\"v\(index)\""))
    }
    let queue = try await FleetTestDatabase.queue()
    let ids = try await queue.add(
      (0..<5).map { try FleetJobRequest(url: server.url("/f\($0).bin"), directory: "out/sub") })
    let directory = try TemporaryDirectory()
    let summary = try await worker(queue, directory).bounded()
    #expect(summary == FleetWorkerSummary(completed: 5))
    for (index, id) in ids.enumerated() {
      let file = directory.file("out/sub/f\(index).bin")
      #expect(try Data(contentsOf: file) == Data(bodies[index]))
      let job = try #require(try await queue.jobs([id]).first)
      #expect(job.state == .complete)
      #expect(job.file == "out/sub/f\(index).bin")
      #expect(job.bytes == Int64(bodies[index].count))
      #expect(job.sha256?.count == 64)
      #expect(job.finishedBy == "w" && job.worker == nil)
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.file("out/sub").path).sorted()
    #expect(names == (0..<5).map { "f\($0).bin" })  // no .part, no .haul left behind
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func pauseAndRemoveFromAnotherHostReachARunningJob() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let body = TestResource.random(size: 2_000_000, seed: 7)
    var faults = TestFaults()
    // 40 s each: the pause and the removal (a poll away, slow under a loaded suite) must find
    // the jobs still running; the pause lifts the limit before the resume.
    faults.bytesPerSecond = 50_000
    server.setResource("/slow.bin", TestResource(body: body, etag: "\"s\"", faults: faults))
    server.setResource("/slow2.bin", TestResource(body: body, etag: "\"s2\"", faults: faults))
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try FleetJobRequest(url: server.url("/slow.bin"))])[0]
    let other = try await queue.add([try FleetJobRequest(url: server.url("/slow2.bin"))])[0]
    let directory = try TemporaryDirectory()
    let worker = try worker(queue, directory, exitWhenIdle: false)
    let recorder = Recorder(worker)
    let running = Task { try await worker.bounded() }
    _ = try await recorder.waitFor(Self.isStarted(id))
    _ = try await recorder.waitFor(Self.isStarted(other))
    let elsewhere = try await FleetQueue(queue.address)
    try await elsewhere.pause([id])
    try await elsewhere.remove([other])
    _ = try await recorder.waitFor { if case .released(id, .paused, _) = $0 { true } else { false } }
    _ = try await recorder.waitFor { if case .released(other, .removed, _) = $0 { true } else { false } }
    // Paused: the bytes are kept for later; removed: the partial file is gone.
    #expect(FileManager.default.fileExists(atPath: directory.file("slow.bin.part").path))
    #expect(!FileManager.default.fileExists(atPath: directory.file("slow2.bin.part").path))
    #expect(!FileManager.default.fileExists(atPath: directory.file("slow2.bin.haul").path))
    let paused = try #require(try await queue.jobs([id]).first)
    #expect(paused.state == .paused)
    #expect(paused.bytes > 0)
    // Resumed from any host, it continues from its .part.
    server.updateFaults("/slow.bin") { $0.bytesPerSecond = nil }
    try await elsewhere.resume([id])
    let started = try await recorder.waitFor {
      if case .started(id, let start) = $0 { start.resumedFrom > 0 } else { false }
    }
    _ = started
    _ = try await recorder.waitFor { if case .completed(id, _) = $0 { true } else { false } }
    worker.drain()
    _ = try await running.value
    #expect(try Data(contentsOf: directory.file("slow.bin")) == Data(body))
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func aLostLeaseStopsTheWorkerAndTheNextHolderResumesFromThePart() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let body = TestResource.random(size: 1_500_000, seed: 9)
    var faults = TestFaults()
    // 15 s: the lease must be lost while the job runs; the limit is lifted for the next holder.
    faults.bytesPerSecond = 100_000
    server.setResource("/f.bin", TestResource(body: body, etag: "\"f\"", faults: faults))
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try FleetJobRequest(url: server.url("/f.bin"))])[0]
    let directory = try TemporaryDirectory()
    // One job at a time: it cannot claim the job again while its runner still holds it.
    let first = try worker(queue, directory, name: "first", concurrency: 1, exitWhenIdle: false)
    let recorder = Recorder(first)
    let running = Task { try await first.bounded() }
    _ = try await recorder.waitFor(Self.isStarted(id))
    // The database takes the job back as if the first worker had stopped renewing, and another
    // worker claims it: in one transaction, so that no renewal of the first slips in between.
    let taken = try await queue.client.run { connection throws(PostgresError) in
      try connection.transaction { () throws(PostgresError) -> PostgresRows in
        try connection.query("UPDATE haul.jobs SET lease_expires_at = now() - interval '1 second'")
        try connection.query(FleetSQL.rescue, [10])
        return try connection.query(FleetSQL.claim, ["thief", 30.0])
      }
    }
    guard case .claimed(let thief) = try FleetQueue.claimed(from: taken) else {
      Issue.record("the rescued job was not claimable")
      return
    }
    // The first worker's next renewal finds the lease gone: it stops and records nothing.
    _ = try await recorder.waitFor { if case .leaseLost(id, false) = $0 { true } else { false } }
    first.drain()
    #expect(try await running.value.leasesLost == 1)
    #expect(try await queue.jobs([id]).first?.worker == "thief")
    #expect(try await queue.release(thief) == .queued)
    // Another worker sees the same directory: it continues the .part.
    server.updateFaults("/f.bin") { $0.bytesPerSecond = nil }
    let second = try worker(queue, directory, name: "second")
    let secondRecorder = Recorder(second)
    #expect(try await second.bounded().completed == 1)
    let resumed = try await secondRecorder.waitFor { if case .started = $0 { true } else { false } }
    if case .started(_, let start) = resumed { #expect(start.resumedFrom > 0) }
    #expect(try Data(contentsOf: directory.file("f.bin")) == Data(body))
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .complete)
    #expect(job.finishedBy == "second" && job.worker == nil)
    #expect(job.lostLeases == 1)
  }

  @Test func drainGivesJobsBackWithTheirBytes() async throws {
    let server = try TestServer()
    defer { server.stop() }
    var faults = TestFaults()
    // 40 s: the drain must reach the job while it runs, even from a starved test task.
    faults.bytesPerSecond = 50_000
    server.setResource(
      "/d.bin",
      TestResource(body: TestResource.random(size: 2_000_000, seed: 3), etag: "\"d\"", faults: faults))
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try FleetJobRequest(url: server.url("/d.bin"))])[0]
    let directory = try TemporaryDirectory()
    let worker = try worker(queue, directory, exitWhenIdle: false)
    let recorder = Recorder(worker)
    let running = Task { try await worker.bounded() }
    _ = try await recorder.waitFor(Self.isStarted(id))
    worker.drain()
    #expect(try await running.value == FleetWorkerSummary(released: 1))
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .queued)
    #expect(job.bytes > 0)
    #expect(job.attempts == 0)  // a drained claim does not count
    #expect(FileManager.default.fileExists(atPath: directory.file("d.bin.part").path))
  }

  @Test func aServerErrorFailsTheJobWithItsCategory() async throws {
    let server = try TestServer()
    defer { server.stop() }
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try FleetJobRequest(url: server.url("/missing.bin"))])[0]
    let directory = try TemporaryDirectory()
    #expect(try await worker(queue, directory).bounded() == FleetWorkerSummary(failed: 1))
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .failed)
    #expect(job.error?.category == .server)
  }

  @Test func aWorkerThatLosesTheDatabaseStopsWritingBeforeItsLeaseEnds() async throws {
    let database = try TemporaryPostgres.start()
    defer { database.stop() }
    let server = try TestServer()
    defer { server.stop() }
    var faults = TestFaults()
    faults.bytesPerSecond = 100_000
    let body = TestResource.random(size: 3_000_000, seed: 5)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"f\"", faults: faults))
    let queue = try await FleetQueue(PostgresAddress(database.url()))
    let id = try await queue.add([try FleetJobRequest(url: server.url("/f.bin"))])[0]
    let directory = try TemporaryDirectory()
    let worker = try worker(queue, directory, lease: 4, exitWhenIdle: false)
    let recorder = Recorder(worker)
    let running = Task { try await worker.bounded() }
    _ = try await recorder.waitFor(Self.isStarted(id))
    database.stop()
    // No renewal can get through now: the worker must stop on its own, keeping what it has.
    _ = try await recorder.waitFor { if case .leaseLost(id, false) = $0 { true } else { false } }
    let part = try FileManager.default.attributesOfItem(atPath: directory.file("f.bin.part").path)
    #expect((part[.size] as? Int ?? 0) < body.count)
    #expect(!FileManager.default.fileExists(atPath: directory.file("f.bin").path))
    worker.drain()
    let summary = try await running.value
    // Once for the database's loss; a loaded machine can also miss a renewal before it (lease
    // 4 s), and the job claimed again is lost the same way: each one lost, nothing recorded.
    #expect(
      summary.leasesLost >= 1 && summary.completed + summary.failed + summary.released == 0, "\(summary)")
    #expect(recorder.all.contains { if case .queueError = $0 { true } else { false } })
  }
}
