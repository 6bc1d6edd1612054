import FleetTestSupport
import Foundation
import Testing

@testable import Haul

@Suite(
  .enabled(if: TemporaryPostgres.mustRun, "PostgreSQL is not installed (Debian: postgresql)"),
  .timeLimit(.minutes(6)))
struct FleetQueueTests {
  private func request(_ url: String, priority: Int = 0, connections: Int? = nil) throws -> FleetJobRequest {
    var options = DownloadOptions()
    options.connections = connections
    return try FleetJobRequest(url: url, directory: "d", priority: priority, options: options)
  }

  private func claimed(_ claim: FleetClaim) -> FleetLease? {
    if case .claimed(let lease) = claim { lease } else { nil }
  }

  @Test func addsListsAndClaimsEachJobOnce() async throws {
    let queue = try await FleetTestDatabase.queue()
    let ids = try await queue.add((0..<5).map { try request("http://a.example/f\($0)") })
    #expect(ids.count == 5)
    #expect(Set(ids).count == 5)
    #expect(ids.allSatisfy(FleetSQL.isJobID))
    let listed = try await queue.jobs()
    #expect(listed.map(\.id) == ids)
    #expect(listed.allSatisfy { $0.state == .queued && $0.directory == "d" })
    // Five claims (the origin allows 4 connections by default, so complete one in between).
    var seen: [String] = []
    for round in 0..<5 {
      let lease = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
      seen.append(lease.id)
      #expect(lease.connections == 1)
      if round == 3 {
        #expect(try await queue.claim(worker: "w", leaseSeconds: 30) == .idle)  // a.example is full
        let result = DownloadResult(
          file: URL(fileURLWithPath: "/x"), totalBytes: 10, bytesReceived: 10, resumedFrom: 0,
          finalURL: "http://a.example/final", wasAlreadyComplete: false, remoteChanged: false, duration: 1,
          sha256: String(repeating: "a", count: 64))
        #expect(try await queue.complete(lease, result: result, file: "d/f3"))
        #expect(try await !queue.complete(lease, result: result, file: "d/f3"))  // once only
      }
    }
    #expect(seen == ids)  // first added, first claimed
    #expect(try await queue.claim(worker: "w", leaseSeconds: 30) == .idle)
    let done = try #require(try await queue.jobs([ids[3]]).first)
    #expect(done.state == .complete)
    #expect(done.sha256 == String(repeating: "a", count: 64))
    #expect(done.finalURL == "http://a.example/final")
    #expect(done.totalBytes == 10)
    #expect(done.worker == nil && done.finishedBy == "w")
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  /// Only an active job has a holder: one that is complete, failed, given back, paused or delayed
  /// is held by no worker, whoever held it last (who finished it is `finishedBy`).
  @Test func onlyAnActiveJobNamesAWorker() async throws {
    let queue = try await FleetTestDatabase.queue()
    let names = ["complete", "failed", "queued", "paused", "delayed", "active"]
    let ids = try await queue.add(try names.map { try request("http://\($0).example/f") })
    var leases: [String: FleetLease] = [:]
    for _ in names {
      let lease = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
      leases[names[try #require(ids.firstIndex(of: lease.id))]] = lease
    }
    let result = DownloadResult(
      file: URL(fileURLWithPath: "/x"), totalBytes: 1, bytesReceived: 1, resumedFrom: 0,
      finalURL: "http://x/",
      wasAlreadyComplete: false, remoteChanged: false, duration: 1, sha256: nil)
    #expect(try await queue.complete(try #require(leases["complete"]), result: result, file: "d/f"))
    #expect(try await queue.fail(try #require(leases["failed"]), error: HaulError(.server, "404"), bytes: 0))
    #expect(try await queue.release(try #require(leases["queued"])) == .queued)
    try await queue.pause([ids[3]])
    #expect(try await queue.release(try #require(leases["paused"])) == .paused)
    #expect(try await queue.release(try #require(leases["delayed"]), delay: 60) == .delayed)
    let jobs = try await queue.jobs()
    #expect(jobs.map(\.state.rawValue) == names)
    #expect(jobs.map(\.worker) == [nil, nil, nil, nil, nil, "w"])
    #expect(jobs.map(\.finishedBy) == ["w", "w", nil, nil, nil, nil])
  }

  @Test func originsTakeTurnsAndPriorityComesFirst() async throws {
    let queue = try await FleetTestDatabase.queue()
    try await queue.add(try (0..<3).map { try request("http://a.example/\($0)") })
    try await queue.add(try (0..<3).map { try request("http://b.example/\($0)") })
    let urgent = try await queue.add([try request("http://c.example/urgent", priority: 5)])[0]
    var order: [String] = []
    while let lease = claimed(try await queue.claim(worker: "w", leaseSeconds: 30)) {
      order.append(lease.id == urgent ? "urgent" : String(lease.origin.dropFirst("http://".count).prefix(1)))
    }
    #expect(order == ["urgent", "a", "b", "a", "b", "a", "b"])
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func theOriginLimitCountsConnectionsOverTheFleet() async throws {
    let queue = try await FleetTestDatabase.queue()
    try await queue.setConnectionLimit(3, for: "http://slow.example/")
    try await queue.add([try request("http://slow.example/big", connections: 8)])
    try await queue.add(try (0..<3).map { try request("http://slow.example/\($0)") })
    // The first job asked for 8 and gets the origin's 3; nothing else fits until it ends.
    let big = try #require(claimed(try await queue.claim(worker: "w1", leaseSeconds: 30)))
    #expect(big.connections == 3)
    #expect(try await queue.claim(worker: "w2", leaseSeconds: 30) == .idle)
    #expect(try await queue.release(big, delay: 0, reason: nil) == .queued)
    let limits = try await queue.connectionLimits()
    #expect(limits.defaultLimit == 4)
    #expect(limits.origins.first { $0.origin == "http://slow.example" }?.active == 0)
    // The default applies to origins without a limit of their own.
    try await queue.setConnectionLimit(1)
    try await queue.add([try request("http://other.example/x"), try request("http://other.example/y")])
    var other: [FleetLease] = []
    while let lease = claimed(try await queue.claim(worker: "w", leaseSeconds: 30)) { other.append(lease) }
    #expect(other.filter { $0.origin == "http://other.example" }.count == 1)
    #expect(other.filter { $0.origin == "http://slow.example" }.map(\.connections).reduce(0, +) <= 3)
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func aLostLeaseCannotChangeTheJobAndAnExpiredOneIsTakenBack() async throws {
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try request("http://a.example/f")])[0]
    let first = try #require(claimed(try await queue.claim(worker: "w1", leaseSeconds: 30)))
    #expect(
      try await queue.renew(first, progress: FleetProgress(bytes: 100, totalBytes: 1000), leaseSeconds: 30)
        == .held(request: nil))
    try await expireLeases(queue)
    #expect(try await queue.maintain().rescued == 1)
    let second = try #require(claimed(try await queue.claim(worker: "w2", leaseSeconds: 30)))
    #expect(second.id == id)
    #expect(second.token > first.token)
    #expect(second.bytes == 100)  // what the first holder recorded
    // The first holder's statements no longer match anything.
    #expect(try await queue.renew(first, progress: FleetProgress(bytes: 200), leaseSeconds: 30) == .lost)
    #expect(try await queue.release(first) == nil)
    #expect(try await !queue.fail(first, error: HaulError(.network, "x"), bytes: nil))
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .active)
    #expect(job.worker == "w2")
    #expect(job.lostLeases == 1)
    #expect(job.attempts == 2)
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  /// A holder that stops reporting (killed, or its transfer stalled) shows no speed once its
  /// last report is older than `FleetJob.speedLifetime`, long before its lease ends.
  @Test func aSpeedIsShownOnlyWhileItsReportIsFresh() async throws {
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try request("http://a.example/f")])[0]
    let lease = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
    let progress = FleetProgress(bytes: 100, totalBytes: 1000, bytesPerSecond: 2048)
    #expect(try await queue.renew(lease, progress: progress, leaseSeconds: 30) == .held(request: nil))
    #expect(try await queue.jobs([id]).first?.bytesPerSecond == 2048)
    try await queue.client.run { connection throws(PostgresError) in
      try connection.query(
        "UPDATE haul.jobs SET progress_at = now() - make_interval(secs => $1::float8)",
        [FleetJob.speedLifetime + 1])
    }
    let stale = try #require(try await queue.jobs([id]).first)
    #expect(stale.bytesPerSecond == nil)
    #expect(stale.bytes == 100 && stale.state == .active && stale.worker == "w")
    // The next report shows it again.
    #expect(try await queue.renew(lease, progress: progress, leaseSeconds: 30) == .held(request: nil))
    #expect(try await queue.jobs([id]).first?.bytesPerSecond == 2048)
  }

  @Test func aJobThatKeepsLosingItsLeaseFailsInTheEnd() async throws {
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try request("http://a.example/f")])[0]
    for _ in 0..<3 {
      _ = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
      try await expireLeases(queue)
      try await queue.maintain(maxLostLeases: 3)
    }
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .failed)
    #expect(job.error?.message.contains("3 workers lost their lease") == true)
    #expect(job.worker == nil && job.finishedBy == nil)  // the queue gave up on it, no worker
    #expect(try await queue.retry([id]) == [id])
    #expect(try await queue.jobs([id]).first?.state == .queued)
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func pauseResumeAndRemoveFromAnotherHost() async throws {
    let queue = try await FleetTestDatabase.queue()
    let ids = try await queue.add(try (0..<3).map { try request("http://a.example/\($0)") })
    let held = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
    #expect(held.id == ids[0])
    // Another host (another connection) pauses everything.
    let other = try await FleetQueue(queue.address)
    #expect(Set(try await other.pause()) == Set(ids))
    let states = try await queue.jobs().map(\.state)
    #expect(states == [.active, .paused, .paused])
    #expect(try await queue.jobs([ids[0]]).first?.pendingRequest == "pause")
    // The holder learns it at its next renewal and gives the job back: it is paused.
    #expect(
      try await queue.renew(held, progress: FleetProgress(), leaseSeconds: 30) == .held(request: "pause"))
    #expect(try await queue.release(held, bytes: 5) == .paused)
    #expect(try await queue.claim(worker: "w", leaseSeconds: 30) == .idle)
    #expect(try await other.resume([ids[1]]) == [ids[1]])
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.id == ids[1])
    // Remove: a waiting job at once, a held one through its worker.
    #expect(try await other.remove([ids[2], ids[1]]).sorted() == [ids[1], ids[2]].sorted())
    #expect(try await queue.jobs().map(\.id) == [ids[0], ids[1]])
    #expect(try await queue.jobs(includeRemoved: true).count == 3)
    #expect(try await queue.jobs([ids[1]]).first?.pendingRequest == "remove")
    #expect(try await FleetTestDatabase.countersAgree(queue))
    await #expect(throws: HaulError.self) { try await other.pause(["not-an-id"]) }
  }

  @Test func reprioritisingMovesAWaitingJobAhead() async throws {
    let queue = try await FleetTestDatabase.queue()
    let ids = try await queue.add(try (0..<3).map { try request("http://a.example/\($0)") })
    try await queue.add([try request("http://b.example/x", priority: 1)])
    #expect(try await queue.setPriority(9, of: [ids[2]]) == [ids[2]])
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.id == ids[2])
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.origin == "http://b.example")
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.id == ids[0])
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func aDelayedJobIsQueuedAgainWhenDue() async throws {
    let queue = try await FleetTestDatabase.queue()
    let id = try await queue.add([try request("http://a.example/f")])[0]
    let lease = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
    let reason = HaulError(.network, "connection refused")
    #expect(try await queue.release(lease, delay: 3600, countsAsAttempt: true, reason: reason) == .delayed)
    let job = try #require(try await queue.jobs([id]).first)
    #expect(job.state == .delayed)
    #expect(job.error == reason)
    #expect((job.retryIn ?? 0) > 3000)
    #expect(try await queue.maintain().promoted == 0)
    #expect(try await queue.claim(worker: "w", leaseSeconds: 30) == .idle)
    try await queue.client.run { connection throws(PostgresError) in
      try connection.query("UPDATE haul.jobs SET run_after = now() - interval '1 second'")
    }
    #expect(try await queue.maintain().promoted == 1)
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.id == id)
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func optionsTravelWithTheJob() async throws {
    let queue = try await FleetTestDatabase.queue()
    var options = DownloadOptions()
    options.rateLimit = 1000
    options.checksum = try Checksum(parsing: "sha-256=" + String(repeating: "b", count: 64))
    options.headers = [("Authorization", "Bearer t"), ("X-A", "1")]
    options.overwrite = true
    options.stallTimeout = 7
    try await queue.add([try FleetJobRequest(url: "http://a.example/f", fileName: "g.bin", options: options)])
    let lease = try #require(claimed(try await queue.claim(worker: "w", leaseSeconds: 30)))
    #expect(lease.fileName == "g.bin")
    #expect(lease.directory == "")
    let restored = try lease.downloadOptions()
    #expect(restored.rateLimit == 1000)
    #expect(restored.checksum == options.checksum)
    #expect(restored.headers.map { "\($0.name)=\($0.value)" } == ["Authorization=Bearer t", "X-A=1"])
    #expect(restored.overwrite)
    #expect(restored.stallTimeout == 7)
    #expect(restored.connections == 1)
  }

  @Test func requestsRefuseWhatAQueueMustNotCarry() {
    for directory in ["/etc", "a/../..", "..", "a\u{1}b"] {
      #expect(throws: HaulError.self) { try FleetJobRequest(url: "http://a/f", directory: directory) }
    }
    #expect(throws: HaulError.self) { try FleetJobRequest(url: "http://a/f", fileName: "../x") }
    // A name the user chose may be hidden; only server-chosen names lose their leading dots.
    #expect((try? FleetJobRequest(url: "http://a/f", fileName: ".bashrc"))?.fileName == ".bashrc")
    #expect(throws: HaulError.self) { try FleetJobRequest(url: "gopher://a/f") }
    #expect((try? FleetJobRequest(url: "http://a/f", directory: "x//y/"))?.directory == "x/y")
    #expect(FleetJobRequest.origin(of: "https://User:pw@Example.COM:443/a?b") == "https://example.com")
    #expect(FleetJobRequest.origin(of: "http://example.com:8080/a") == "http://example.com:8080")
  }

  @Test func theSchemaIsVersionedAndANewerOneRefused() async throws {
    let url = try FleetTestDatabase.url()
    let queue = try await FleetQueue(PostgresAddress(url))
    try await queue.client.run { connection throws(PostgresError) in
      #expect(
        try connection.query("SELECT value FROM haul.meta WHERE key = 'schema_version'")[0, 0]
          == "\(FleetSchema.version)")
      try connection.query("UPDATE haul.meta SET value = '99' WHERE key = 'schema_version'")
    }
    do {
      _ = try await FleetQueue(PostgresAddress(url))
      Issue.record("a newer schema was accepted")
    } catch {
      #expect(error.message.contains("schema version 99"))
      #expect(error.hint?.contains("upgrade haul") == true)
    }
  }

  @Test func aVersionOneQueueIsMigratedInPlace() async throws {
    let url = try FleetTestDatabase.url()
    // A queue as the first release made it, with a job waiting.
    let connection = try PostgresConnection(PostgresAddress(url))
    try connection.query("CREATE SCHEMA haul")
    try connection.query("CREATE TABLE haul.meta (key text PRIMARY KEY, value text NOT NULL)")
    for statement in FleetSchema.migrations[0] { try connection.query(statement) }
    try connection.query("INSERT INTO haul.meta VALUES ('schema_version', '1')")
    try connection.query(
      "INSERT INTO haul.origins (origin, max_connections, queued) VALUES ('http://a.example', 4, 1)")
    try connection.query(
      "INSERT INTO haul.jobs (gid, url, origin) VALUES ('00000000000000aa', 'http://a.example/f', 'http://a.example')"
    )
    let queue = try await FleetQueue(PostgresAddress(url))
    #expect(
      try connection.query("SELECT value FROM haul.meta WHERE key = 'schema_version'")[0, 0]
        == "\(FleetSchema.version)")
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.id == "00000000000000aa")
  }

  @Test func jobsAddedPausedWaitForResume() async throws {
    let queue = try await FleetTestDatabase.queue()
    let ids = try await queue.add([try request("http://a.example/f")], paused: true)
    #expect(try await queue.jobs().map(\.state) == [.paused])
    #expect(try await queue.claim(worker: "w", leaseSeconds: 30) == .idle)
    try await queue.resume(ids)
    #expect(claimed(try await queue.claim(worker: "w", leaseSeconds: 30))?.id == ids[0])
    #expect(try await FleetTestDatabase.countersAgree(queue))
  }

  @Test func workersStartingTogetherMigrateOnce() async throws {
    let address = try PostgresAddress(FleetTestDatabase.url())
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<6 { group.addTask { _ = try await FleetQueue(address) } }
      try await group.waitForAll()
    }
    let queue = try await FleetQueue(address)
    try await queue.add([try request("http://a.example/f")])
    #expect(try await queue.counts() == [.queued: 1])
  }

  private func expireLeases(_ queue: FleetQueue) async throws {
    try await queue.client.run { connection throws(PostgresError) in
      try connection.query(
        "UPDATE haul.jobs SET lease_expires_at = now() - interval '1 second' WHERE state = 'active'")
    }
  }
}
