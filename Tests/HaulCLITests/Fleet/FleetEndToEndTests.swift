import FleetTestSupport
import Foundation
import Haul
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul worker` processes against the test process's PostgreSQL and a throttled nginx.
@Suite(
  .enabled(
    if: TemporaryPostgres.mustRun && (FleetNginx.binary != nil || TestEnvironment.isCI),
    "PostgreSQL or nginx is not installed (Debian: postgresql, nginx-light)"), .timeLimit(.minutes(6)))
struct FleetEndToEndTests {
  /// A worker process; every request it sends carries `X-Haul-Worker: NAME`, for the access log.
  /// Killed after `lifetime` seconds if still running (a bound against a hang, and no worker
  /// outlives a failed test: a killed one's outcome fails the test's expectations).
  private func startWorker(
    _ name: String, queue: String, directory: URL, jobs: Int, lease: Double = 4, extra: [String] = [],
    lifetime: Double = 300
  ) throws -> ChildProcess {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    let worker = try ChildProcess.start(
      binary,
      [
        "worker", "--name", name, "-j", String(jobs), "-d", directory.path, "--lease", String(lease),
        "--json",
        "-H", "X-Haul-Worker: \(name)",
      ] + extra, environment: [PostgresAddress.environmentVariable: queue])
    worker.signal(SIGKILL, after: lifetime)
    return worker
  }

  private func waitUntil(
    _ what: String, _ condition: () async throws -> Bool
  ) async throws {
    // A generous deadline only bounds a hang; nothing is timed.
    let deadline = ContinuousClock.now + .seconds(180)
    while try await !condition() {
      guard ContinuousClock.now < deadline else {
        Issue.record("gave up waiting: \(what)")
        throw CancellationError()
      }
      try await Task.sleep(for: .milliseconds(50))
    }
  }

  @Test func threeWorkersOneKilledEveryJobOnceAndByteExact() async throws {
    let nginx = try await FleetNginx.start(bytesPerSecond: 300_000)
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    try await queue.setConnectionLimit(8)  // 3 workers × 2 jobs fit; politeness has its own test
    var bodies: [String: [UInt8]] = [:]
    for index in 0..<24 {
      let body = TestResource.random(size: 1_500_000 + index * 4096, seed: UInt64(100 + index))
      bodies["f\(index).bin"] = body
      try Data(body).write(to: nginx.root.file("f\(index).bin"))
    }
    let ids = try await queue.add(bodies.keys.sorted().map { try FleetJobRequest(url: nginx.url($0)) })
    let directory = try TemporaryDirectory()  // shared by the three workers, as an NFS mount would be
    // The victim is held to 60 kB/s, so that it cannot finish its job before the kill however
    // slowly this test is scheduled on a loaded machine.
    let victim = try startWorker(
      "victim", queue: url, directory: directory.url, jobs: 1, extra: ["--limit-rate", "60K"])
    let survivors = try ["alpha", "beta"].map {
      try startWorker($0, queue: url, directory: directory.url, jobs: 2, extra: ["--exit-when-idle"])
    }
    // Kill the victim -9 once its job has bytes on disk.
    try await waitUntil("the victim's job has progress") {
      try await queue.jobs().contains { $0.worker == "victim" && $0.state == .active && $0.bytes > 50_000 }
    }
    let held = try await queue.jobs().filter { $0.worker == "victim" && $0.state == .active }.map(\.id)
    #expect(!held.isEmpty)
    victim.signal(SIGKILL)
    let victimOutcome = await victim.wait()
    #expect(victimOutcome.signaled)
    var outcomes = [victimOutcome]
    for survivor in survivors {
      let outcome = await survivor.wait()
      #expect(outcome.status == 0, "\(outcome)")
      outcomes.append(outcome)
    }
    await nginx.stop()

    // Every job complete, exactly once.
    let jobs = try await queue.jobs()
    #expect(jobs.count == 24)
    #expect(jobs.allSatisfy { $0.state == .complete }, "\(jobs.map { "\($0.id) \($0.state)" })")
    let completions = outcomes.flatMap(\.events).filter { $0["event"] == "completed" }.compactMap { $0["id"] }
    #expect(completions.sorted() == ids.sorted(), "each job completed once: \(completions)")
    // The victim's jobs were finished by others, after their leases expired.
    for id in held {
      let job = try #require(jobs.first { $0.id == id })
      #expect(job.finishedBy != nil && job.finishedBy != "victim")
      #expect(job.lostLeases == 1)
    }
    // Every file byte-exact, and nothing else in the directory (no .part, no .haul).
    for (name, body) in bodies {
      let data = try Data(contentsOf: directory.file(name))
      #expect(data == Data(body), "\(name) differs")
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
    #expect(names == bodies.keys.sorted())
    for job in jobs { #expect(job.sha256 != nil && job.bytes == Int64(bodies[job.file ?? ""]?.count ?? -1)) }

    // The access log: two workers never had the same file open at once, and the killed
    // worker's files were continued (a Range) by another one only after it was gone.
    let requests = nginx.requests()
    #expect(requests.count >= 24)
    let byFile = Dictionary(grouping: requests, by: \.uri)
    var resumedElsewhere = 0
    for (uri, list) in byFile {
      for a in list {
        for b in list where a.worker != b.worker {
          #expect(a.end <= b.start || b.end <= a.start, "\(uri): \(a) overlaps \(b)")
        }
      }
      let victimRequests = list.filter { $0.worker == "victim" }
      if let victimEnd = victimRequests.map(\.end).max(), victimRequests.contains(where: { $0.bytes > 0 }) {
        let others = list.filter { $0.worker != "victim" }
        #expect(!others.isEmpty || jobs.first { "/\($0.file ?? "")" == uri }?.finishedBy == "victim")
        for other in others {
          #expect(other.start >= victimEnd)
          if other.range?.hasPrefix("bytes=") == true, other.range != "bytes=0-" { resumedElsewhere += 1 }
        }
      }
    }
    #expect(resumedElsewhere >= 1, "a killed worker's .part was resumed by another")
    #expect(try await queue.connectionLimits().origins.allSatisfy { $0.active == 0 && $0.queued == 0 })
  }

  @Test func theFleetNeverOpensMoreThanTheOriginsLimit() async throws {
    let nginx = try await FleetNginx.start(bytesPerSecond: 300_000)
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    try await queue.setConnectionLimit(2)
    var requests: [FleetJobRequest] = []
    for index in 0..<8 {
      try Data(TestResource.random(size: 300_000, seed: UInt64(index))).write(
        to: nginx.root.file("p\(index).bin"))
      var options = DownloadOptions()
      options.connections = 4  // asks for more than the origin allows
      requests.append(try FleetJobRequest(url: nginx.url("p\(index).bin"), options: options))
    }
    try await queue.add(requests)
    let directory = try TemporaryDirectory()
    let workers = try ["w1", "w2", "w3"].map {
      try startWorker($0, queue: url, directory: directory.url, jobs: 4, extra: ["--exit-when-idle"])
    }
    for worker in workers {
      let outcome = await worker.wait()
      #expect(outcome.status == 0, "\(outcome)")
    }
    await nginx.stop()
    #expect(try await queue.counts() == [.complete: 8])
    // At no instant were more than 2 requests in flight at the server, over all three workers.
    let log = nginx.requests()
    #expect(log.count >= 8)
    var edges: [(time: Double, change: Int)] = []
    for request in log {
      edges.append((request.start, 1))
      edges.append((request.end, -1))
    }
    // At equal times, an end before a start (nginx's times have millisecond resolution).
    edges.sort { left, right in left.time != right.time ? left.time < right.time : left.change < right.change
    }
    var open = 0
    var most = 0
    for edge in edges {
      open += edge.change
      most = max(most, open)
    }
    #expect(most <= 2, "\(log)")
  }

  @Test func sigtermDrainsAndGivesTheJobsBack() async throws {
    let nginx = try await FleetNginx.start(bytesPerSecond: 100_000)
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    for index in 0..<2 {
      try Data(TestResource.random(size: 2_000_000, seed: UInt64(index))).write(
        to: nginx.root.file("s\(index).bin"))
    }
    try await queue.add([
      try FleetJobRequest(url: nginx.url("s0.bin")), try FleetJobRequest(url: nginx.url("s1.bin")),
    ])
    let directory = try TemporaryDirectory()
    let worker = try startWorker("drainer", queue: url, directory: directory.url, jobs: 2, lease: 30)
    try await waitUntil("both jobs have progress") {
      try await queue.jobs().filter { $0.state == .active && $0.bytes > 0 }.count == 2
    }
    worker.signal(SIGTERM)
    let outcome = await worker.wait()
    await nginx.stop()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.eventNames.contains("draining"))
    #expect(outcome.events.filter { $0["event"] == "released" && $0["state"] == "queued" }.count == 2)
    #expect(outcome.event("worker_finished")?["released"] == "2")
    // At once claimable by others, with their bytes kept and the claim not counted as an attempt.
    for job in try await queue.jobs() {
      #expect(job.state == .queued)
      #expect(job.bytes > 0)
      #expect(job.attempts == 0)
      #expect(job.worker == nil)  // given back: held by no one
    }
    #expect(FileManager.default.fileExists(atPath: directory.file("s0.bin.part").path))
  }

  /// `timeout` and supervisors send SIGTERM to the worker and to its group: a second termination
  /// signal must not cut the drain short (it exited 130 and left its jobs held until their lease
  /// ran out). Stopped, the worker gets SIGTERM and SIGHUP at once when it continues (two
  /// signals of one kind would merge into one).
  @Test func repeatedTerminationSignalsStillDrain() async throws {
    let nginx = try await FleetNginx.start(bytesPerSecond: 100_000)
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    try Data(TestResource.random(size: 2_000_000, seed: 4)).write(to: nginx.root.file("t.bin"))
    try await queue.add([try FleetJobRequest(url: nginx.url("t.bin"))])
    let directory = try TemporaryDirectory()
    let worker = try startWorker("twice", queue: url, directory: directory.url, jobs: 1, lease: 30)
    try await waitUntil("the job has progress") {
      try await queue.jobs().filter { $0.state == .active && $0.bytes > 0 }.count == 1
    }
    worker.signal(SIGSTOP)
    worker.signal(SIGTERM)
    worker.signal(SIGHUP)
    worker.signal(SIGCONT)
    let outcome = await worker.wait()
    await nginx.stop()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.event("worker_finished")?["released"] == "1", "\(outcome)")
    #expect(try await queue.jobs().map(\.state) == [.queued])
  }

  /// `haul add --queue … --paused` adds the jobs paused in one statement: a worker waiting on
  /// the queue meanwhile never claims one (adding queued and pausing after let it).
  @Test func jobsAddedPausedFromTheCommandAreNeverClaimed() async throws {
    let nginx = try await FleetNginx.start(bytesPerSecond: 100_000)
    let url = try TemporaryPostgres.shared().createDatabase()
    let queue = try await FleetQueue(PostgresAddress(url))
    try Data(TestResource.random(size: 200_000, seed: 9)).write(to: nginx.root.file("p.bin"))
    let directory = try TemporaryDirectory()
    let worker = try startWorker("eager", queue: url, directory: directory.url, jobs: 4)
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    var added: [String] = []
    for _ in 0..<3 {
      let outcome = try await ChildProcess.start(
        binary, ["add", "--queue", url, "--paused", nginx.url("p.bin")]
      ).wait()
      #expect(outcome.status == 0, "\(outcome)")
      added += outcome.stdout.split(separator: "\n").map(String.init)
    }
    try await Task.sleep(for: .seconds(2))  // the worker polls the queue meanwhile
    worker.signal(SIGTERM)
    let outcome = await worker.wait()
    await nginx.stop()
    #expect(added.count == 3)
    #expect(!outcome.eventNames.contains("claimed"), "\(outcome)")
    for job in try await queue.jobs() {
      #expect(job.state == .paused)
      #expect(job.worker == nil && job.attempts == 0 && job.bytes == 0)
    }
    #expect(nginx.requests().isEmpty)
  }

  /// A job whose state refuses the change exits 1, as a catalog download does; one already as
  /// asked (paused again) is no failure.
  @Test func aStateConflictExitsOne() async throws {
    let nginx = try await FleetNginx.start(bytesPerSecond: 100_000)
    let url = try TemporaryPostgres.shared().createDatabase()
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    func haul(_ arguments: String...) async throws -> ProcessOutcome {
      try await ChildProcess.start(binary, arguments + ["--queue", url]).wait()
    }
    let paused = try await haul("add", "--paused", nginx.url("a.bin"))
    let pausedID = try #require(paused.stdout.split(separator: "\n").first.map(String.init), "\(paused)")
    let again = try await haul("pause", pausedID)
    #expect(again.status == 0, "\(again)")
    #expect(again.stderr.contains("was left as it is"))
    // A 404 fails the job at once.
    let missing = try await haul("add", nginx.url("missing.bin"))
    let failedID = try #require(missing.stdout.split(separator: "\n").first.map(String.init), "\(missing)")
    let directory = try TemporaryDirectory()
    let worker = try startWorker(
      "w", queue: url, directory: directory.url, jobs: 1, extra: ["--exit-when-idle"])
    _ = await worker.wait()
    await nginx.stop()
    let pause = try await haul("pause", failedID)
    #expect(pause.status == 1, "\(pause)")
    #expect(pause.stderr.contains("job \(failedID) is failed: there is nothing to pause"))
    #expect(!pause.stderr.contains("--help"))
    let resume = try await haul("resume", failedID)
    #expect(resume.status == 1, "\(resume)")
    #expect(resume.stderr.contains("haul queue retry \(failedID)"))
  }

  @Test func withoutLibpqTheWorkerSaysWhatToInstall() async throws {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    let outcome = try await ChildProcess.start(
      binary, ["worker", "--queue", "postgresql://u:topsecret@127.0.0.1:1/db"],
      environment: ["HAUL_LIBPQ": "/nonexistent/libpq.so.5"]
    ).wait()
    #expect(outcome.status == 1)
    #expect(outcome.stderr.contains("libpq"))
    #expect(outcome.stderr.contains("apt-get install libpq5"))
    #expect(!outcome.stderr.contains("topsecret"))
    // Everything else keeps working without it.
    let version = try await ChildProcess.start(
      binary, ["--version"], environment: ["HAUL_LIBPQ": "/nonexistent"]
    )
    .wait()
    #expect(version.status == 0)
  }

  @Test func usageErrorsNameTheProblem() async throws {
    let binary = try #require(
      BinaryTests.binary, "the haul executable was not found; build it or set HAUL_BINARY")
    let missing = try await ChildProcess.start(
      binary, ["worker"], environment: [PostgresAddress.environmentVariable: ""]
    ).wait()
    #expect(missing.status == 2)
    #expect(missing.stderr.contains("which queue?"))
    let badJobs = try await ChildProcess.start(binary, ["worker", "--queue", "postgresql://h/d", "-j", "0"])
      .wait()
    #expect(badJobs.status == 2)
    #expect(badJobs.stderr.contains("-j"))
    let notPostgres = try await ChildProcess.start(binary, ["worker", "--queue", "mysql://h/d"]).wait()
    #expect(notPostgres.status == 2)
    #expect(notPostgres.stderr.contains("postgresql://"))
  }
}
