import FleetTestSupport
import Foundation
import Haul
import Testing

@testable import HaulCLI

/// What `haul worker` and `haul queue` tell an operator, where an earlier wording misled.
@Suite struct FleetWordingTests {
  private func printed(_ event: FleetWorkerEvent) -> String {
    let output = OutputCapture()
    WorkerPrinter(name: "w", json: false, quiet: false, sink: output.sink).print(event)
    return output.stderr
  }

  /// A lease also runs out while the database is unreachable and no other worker exists: the
  /// line must not blame another worker, nor say nothing was done when the file is complete.
  @Test func aLostLeaseIsNotBlamedOnAnotherWorker() {
    let stopped = printed(.leaseLost(id: "abcd", finished: false))
    #expect(!stopped.contains("lost to another worker"), "\(stopped)")
    #expect(stopped.contains("unreachable") && stopped.contains("claimed again"), "\(stopped)")
    let finished = printed(.leaseLost(id: "abcd", finished: true))
    #expect(finished.contains("downloaded") && finished.contains("finds the file"), "\(finished)")
    let output = OutputCapture()
    WorkerPrinter(name: "w", json: false, quiet: false, sink: output.sink).finished(
      FleetWorkerSummary(completed: 2, leasesLost: 1))
    #expect(output.stderr.hasSuffix("done: 2 completed, 0 failed, 0 given back, 1 lease lost\n"))
  }

  /// A worker has no terminal to write to: `-o -` would make a file named `-` in its base.
  /// Refused before the queue is reached (this address has nothing listening).
  @Test func aJobForStandardOutputIsRefused() async {
    let output = OutputCapture()
    let status = await HaulCommand.run(
      arguments: ["add", "--queue", "postgresql://127.0.0.1:1/d", "-o", "-", "http://127.0.0.1:1/f"],
      sink: output.sink)
    #expect(status == ExitStatus.usage, "\(output.stderr)")
    #expect(output.stderr.contains("which a job in a shared queue does not have"), "\(output.stderr)")
  }

  @Test func theReturnOfTheQueueIsSaid() {
    #expect(printed(.queueReachable) == "haul worker w: queue: reachable again\n")
  }

  /// `haul queue add` (or ls, pause, resume, rm) is what an operator of a job queue types first.
  @Test func jobCommandsUnderQueuePointToTheirPlace() async {
    for verb in ["add", "ls", "pause", "resume", "rm"] {
      let output = OutputCapture()
      let status = await HaulCommand.run(
        arguments: ["queue", "--queue", "postgresql://h/d", verb, "x"], sink: output.sink)
      #expect(status == ExitStatus.usage)
      #expect(output.stderr.contains("'haul \(verb) --queue URL …'"), "\(output.stderr)")
    }
  }

  @Test(.enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"))
  func oneConnectionIsSingular() async throws {
    let url = try TemporaryPostgres.shared().createDatabase()
    let output = OutputCapture()
    let status = await HaulCommand.run(arguments: ["queue", "--queue", url, "limit", "1"], sink: output.sink)
    #expect(status == ExitStatus.success, "\(output.stderr)")
    #expect(
      output.stderr == "haul: at most 1 connection to each origin without a limit of its own over the fleet\n"
    )
  }
}
