import FleetTestSupport
import Foundation
import Haul
import Testing

@testable import HaulCLI

/// `haul queue status|priority|limit|retry`: parsing, and each command against a queue.
@Suite struct QueueAdminParseTests {
  private func parse(_ arguments: [String], _ environment: [String: String] = [:]) throws
    -> QueueAdminCommand.Request
  {
    try QueueAdminCommand.parse(arguments, environment: environment).request
  }

  @Test func commands() throws {
    #expect(try parse(["status"]) == .status)
    #expect(try parse(["priority", "5", "abcd", "0123"]) == .priority(5, ids: ["abcd", "0123"]))
    #expect(try parse(["priority", "-3", "abcd"]) == .priority(-3, ids: ["abcd"]))
    #expect(try parse(["limit", "2"]) == .limit(2, origin: nil))
    #expect(try parse(["limit", "8", "https://example.com"]) == .limit(8, origin: "https://example.com"))
    #expect(try parse(["retry", "--all"]) == .retry(ids: nil))
    #expect(try parse(["retry", "abcd"]) == .retry(ids: ["abcd"]))
    #expect(try parse(["--help"]) == .help)
  }

  @Test func theQueueComesFromTheOptionOrTheEnvironment() throws {
    let fromVariable = try QueueAdminCommand.parse(
      ["status"], environment: ["HAUL_QUEUE": "postgresql://a/b"])
    #expect(fromVariable.queue == "postgresql://a/b")
    let given = try QueueAdminCommand.parse(
      ["--queue", "postgresql://c/d", "status"], environment: ["HAUL_QUEUE": "postgresql://a/b"])
    #expect(given.queue == "postgresql://c/d")
    #expect(
      try QueueAdminCommand.parse(["--queue=postgresql://e/f", "status"], environment: [:]).queue
        == "postgresql://e/f")
  }

  @Test func mistakesAreUsageErrors() {
    for arguments in [
      [], ["frobnicate"], ["priority"], ["priority", "x", "abcd"], ["priority", "5"], ["limit"],
      ["limit", "2", "a", "b"], ["retry"], ["retry", "--all", "abcd"], ["status", "extra"],
      ["--bogus", "status"],
      ["--queue"],
    ] {
      #expect(throws: UsageError.self, "\(arguments)") { try parse(arguments) }
    }
  }

  @Test func withoutAQueueItSaysWhatToGive() async {
    let output = OutputCapture()
    let status = await QueueAdminCommand.run(["status"], sink: output.sink, environment: [:])
    #expect(status == ExitStatus.usage)
    #expect(output.stderr.contains("HAUL_QUEUE"))
  }
}

@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct QueueAdminTests {
  private func run(_ arguments: [String], _ url: String) async -> (Int32, OutputCapture) {
    let output = OutputCapture()
    let status = await HaulCommand.run(arguments: ["queue", "--queue", url] + arguments, sink: output.sink)
    return (status, output)
  }

  @Test func priorityLimitRetryAndStatusChangeTheQueue() async throws {
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    let ids = try await queue.add([
      try FleetJobRequest(url: "http://a.example/1"), try FleetJobRequest(url: "http://b.example:8080/2"),
    ])

    var (status, output) = await run(["priority", "7", String(ids[1].prefix(6))], url)
    #expect(status == ExitStatus.success, "\(output.stderr)")
    #expect(try await queue.jobs().map(\.priority) == [0, 7])

    (status, output) = await run(["limit", "2", "http://b.example:8080/anything"], url)
    #expect(status == ExitStatus.success, "\(output.stderr)")
    (status, output) = await run(["limit", "9"], url)
    #expect(status == ExitStatus.success)
    let limits = try await queue.connectionLimits()
    #expect(limits.defaultLimit == 9)
    #expect(limits.origins.map(\.origin) == ["http://a.example", "http://b.example:8080"])
    #expect(limits.origins.map(\.limit) == [9, 2])

    // A job that failed for good is queued again from scratch.
    guard case .claimed(let lease) = try await queue.claim(worker: "w", leaseSeconds: 30) else {
      Issue.record("nothing to claim")
      return
    }
    #expect(try await queue.fail(lease, error: HaulError(.server, "404"), bytes: 0))
    (status, output) = await run(["retry", "--all"], url)
    #expect(status == ExitStatus.success)
    #expect(output.stderr.contains("queued \(lease.id) again"))
    #expect(try await queue.jobs([lease.id]).first?.state == .queued)
    // Named, a job that is not failed refuses the change (exit 1); --all with none is no error.
    (status, output) = await run(["retry", String(lease.id.prefix(8))], url)
    #expect(status == ExitStatus.generic, "\(output.stderr)")
    #expect(output.stderr.contains("is not failed"), "\(output.stderr)")
    (status, output) = await run(["retry", "--all"], url)
    #expect(status == ExitStatus.success && output.stderr == "haul: no failed job to retry\n")

    (status, output) = await run(["status"], url)
    #expect(status == ExitStatus.success)
    #expect(output.stdout.hasPrefix("jobs: 2 queued, 0 delayed, 0 active"))
    #expect(output.stdout.contains("http://b.example:8080      2       0        1"))

    (status, output) = await run(["priority", "1", "ffffffff"], url)
    #expect(status == ExitStatus.code(for: HaulError(.invalidInput, "")))
    #expect(output.stderr.contains("ffffffff"))
    await queue.close()
  }

  /// `haul ls --queue URL --json` names a worker only for the jobs it holds now: a job it
  /// completed, failed or gave back is held by no one.
  @Test func lsNamesOnlyTheWorkerHoldingAJob() async throws {
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    let ids = try await queue.add(
      try ["done", "failed", "back", "held"].map { try FleetJobRequest(url: "http://\($0).example/f") })
    var leases: [String: FleetLease] = [:]
    for _ in ids {
      guard case .claimed(let lease) = try await queue.claim(worker: "w1", leaseSeconds: 30) else {
        Issue.record("nothing to claim")
        return
      }
      leases[lease.id] = lease
    }
    let result = DownloadResult(
      file: URL(fileURLWithPath: "/x"), totalBytes: 1, bytesReceived: 1, resumedFrom: 0,
      finalURL: "http://x/",
      wasAlreadyComplete: false, remoteChanged: false, duration: 1, sha256: nil)
    #expect(try await queue.complete(try #require(leases[ids[0]]), result: result, file: "f"))
    #expect(try await queue.fail(try #require(leases[ids[1]]), error: HaulError(.server, "404"), bytes: 0))
    #expect(try await queue.release(try #require(leases[ids[2]])) == .queued)
    await queue.close()

    let output = OutputCapture()
    let status = await HaulCommand.run(arguments: ["ls", "--queue", url, "--json"], sink: output.sink)
    #expect(status == ExitStatus.success, "\(output.stderr)")
    let lines = output.stdout.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
    #expect(lines.compactMap { $0["state"] as? String } == ["complete", "failed", "queued", "active"])
    #expect(lines.map { $0["worker"] as? String } == [nil, nil, nil, "w1"])
    #expect(lines.map { $0["finished_by"] as? String } == ["w1", "w1", nil, nil])
  }
}
