import FleetTestSupport
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// A worker whose database goes away for a while, then comes back.
@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct FleetQueueOutageTests {
  @Test func anOutageIsReportedOnceAndItsEndToo() async throws {
    let database = try TemporaryPostgres.shared()
    let url = try database.createDatabase()
    let name = String(url.split(separator: "/").last ?? "")
    let server = try TestServer()
    defer { server.stop() }
    var faults = TestFaults()
    // 60 s: the outage must begin and end while the job runs, even when this test's task is
    // starved for a while (a loaded ThreadSanitizer suite once let a 15 s job end first). The
    // limit is lifted once the queue is back, so a passing run takes seconds.
    faults.bytesPerSecond = 50_000
    let body = TestResource.random(size: 3_000_000, seed: 11)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"f\"", faults: faults))
    let queue = try await FleetQueue(PostgresAddress(url))
    let id = try await queue.add([try FleetJobRequest(url: server.url("/f.bin"))])[0]
    let directory = try TemporaryDirectory()
    var configuration = FleetWorker.Configuration(name: "w", baseDirectory: directory.url)
    configuration.progressInterval = 0.2
    configuration.idlePollInterval = 0.2
    configuration.maintenanceInterval = 0.3
    configuration.exitWhenIdle = true
    let worker = try FleetWorker(queue: queue, configuration: configuration)
    let recorder = FleetWorkerTests.Recorder(worker)
    let running = Task { try await worker.bounded() }
    _ = try await recorder.waitFor { if case .progress(id, let p) = $0 { p.bytes > 0 } else { false } }
    // The database refuses the worker: its connection is cut and no new one is let in.
    try database.psql([
      "-d", database.url(), "-c", "ALTER DATABASE \(name) ALLOW_CONNECTIONS false",
      "-c", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'",
    ])
    let cut = try await recorder.waitFor { if case .queueError = $0 { true } else { false } }
    _ = cut
    // 150 kB later (3 s: a dozen progress reports and renewals, all failed), the queue is let back in.
    let bytesAtCut = recorder.all.reduce(Int64(0)) {
      if case .progress(id, let p) = $1 { max($0, p.bytes) } else { $0 }
    }
    _ = try await recorder.waitFor {
      if case .progress(id, let p) = $0 { p.bytes >= bytesAtCut + 150_000 } else { false }
    }
    try database.psql(["-d", database.url(), "-c", "ALTER DATABASE \(name) ALLOW_CONNECTIONS true"])
    _ = try await recorder.waitFor { if case .queueReachable = $0 { true } else { false } }
    server.updateFaults("/f.bin") { $0.bytesPerSecond = nil }
    _ = try await recorder.waitFor { if case .completed(id, _) = $0 { true } else { false } }
    #expect(try await running.value == FleetWorkerSummary(completed: 1))
    let events = recorder.all
    let errors = events.filter { if case .queueError = $0 { true } else { false } }
    // Lost the connection, then cannot connect: once each, not once per failed renewal (a
    // dozen or more; a third message is allowed for what a statement in flight may meet).
    #expect((1...3).contains(errors.count), "\(errors)")
    let lastError = try #require(events.lastIndex { if case .queueError = $0 { true } else { false } })
    #expect(events[lastError...].contains { if case .queueReachable = $0 { true } else { false } })
  }

  @Test func anOutageRepeatsOnlyNewErrorsOrAMinuteLater() {
    let emitted = Locked<[FleetWorkerEvent]>([])
    let health = FleetQueueHealth(emit: { event in emitted.withLock { $0.append(event) } })
    let down = HaulError(.network, "cannot connect")
    let lost = HaulError(.network, "lost the connection")
    health.succeeded()
    health.failed(lost, now: 0)
    health.failed(down, now: 0.1)
    // Statements in flight may alternate between the two: neither is said again.
    for tick in 1..<100 { health.failed(tick % 2 == 0 ? down : lost, now: 0.1 + Double(tick) * 0.5) }
    health.failed(down, now: 61)
    health.succeeded()
    health.succeeded()
    health.failed(down, now: 62)
    let messages = emitted.withLock { $0 }.map { event -> String in
      switch event {
      case .queueError(let error): error.message
      case .queueReachable: "reachable"
      default: "other"
      }
    }
    #expect(
      messages == [
        "lost the connection", "cannot connect", "cannot connect", "reachable", "cannot connect",
      ])
  }
}
