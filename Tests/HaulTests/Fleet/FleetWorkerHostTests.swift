import FleetTestSupport
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// A worker whose host cannot write what a job needs must not fail the fleet's jobs for good:
/// other workers, on other disks, can do them.
@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct FleetWorkerHostTests {
  private func configuration(_ base: URL) -> FleetWorker.Configuration {
    var configuration = FleetWorker.Configuration(name: "host", baseDirectory: base)
    configuration.progressInterval = 0.2
    configuration.idlePollInterval = 0.2
    configuration.maintenanceInterval = 0.3
    return configuration
  }

  @Test func aBaseDirectoryThatCannotBeWrittenIsRefusedBeforeAnyClaim() async throws {
    let queue = try await FleetTestDatabase.queue()
    let directory = try TemporaryDirectory()
    let file = directory.file("not-a-directory")
    try Data("x".utf8).write(to: file)
    for base in [file, directory.file("missing")] {
      #expect {
        _ = try FleetWorker(queue: queue, configuration: configuration(base))
      } throws: { error in
        (error as? HaulError)?.category == .fileSystem
          && (error as? HaulError)?.message.contains(base.path) == true
      }
    }
  }

  @Test func aJobDirectoryThisHostCannotMakeIsGivenBackNotFailed() async throws {
    let server = try TestServer()
    defer { server.stop() }
    server.setResource("/a.bin", TestResource(body: TestResource.random(size: 1000, seed: 1), etag: "\"a\""))
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try FleetJobRequest(url: server.url("/a.bin"), directory: "sub")])[0]
    let directory = try TemporaryDirectory()
    // A file where the job's directory goes: on this host only.
    try Data("x".utf8).write(to: directory.file("sub"))
    let worker = try FleetWorker(queue: queue, configuration: configuration(directory.url))
    let recorder = FleetWorkerTests.Recorder(worker)
    let running = Task { try await worker.bounded() }
    let ended = try await recorder.waitFor {
      switch $0 {
      case .released(id, _, _), .failed(id, _): true
      default: false
      }
    }
    worker.drain()
    _ = try await running.value
    guard case .released(_, let state, let reason) = ended else {
      Issue.record("the job failed for good: \(ended)")
      return
    }
    #expect(state == .delayed)
    #expect(reason?.message.contains("not a directory") == true, "\(String(describing: reason))")
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .delayed)
    #expect(job.attempts == 1)
  }
}
