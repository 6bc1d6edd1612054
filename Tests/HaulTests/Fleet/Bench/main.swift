// Fleet measurements (printed, never asserted): the queue's claim and progress-write rates
// against a PostgreSQL of its own, as the queue grows; and three `haul worker` processes
// against one on a throttled in-process server.
//
//   swift run -c release FleetBench                 # everything (about 4 minutes)
//   swift run -c release FleetBench claims --quick  # 10,000 and 100,000 jobs, short runs
//   swift run -c release FleetBench claims --sizes 10000,1000000 --runs 5   # medians and ranges
//   swift run -c release FleetBench workers
//   FleetBench manager QUEUE BASE LEASE URL…        # the crash test's child (ManagerChild.swift)
import FleetTestSupport
import Foundation
import Haul
import HaulTestSupport

#if canImport(Glibc)
  import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let quick = arguments.contains("--quick")
/// Options followed by a value (not modes).
let valued: Set = ["--runs", "--sizes"]
let modes = arguments.enumerated().filter { index, argument in
  !argument.hasPrefix("--") && (index == 0 || !valued.contains(arguments[index - 1]))
}.map(\.element)
let child = modes.first == "manager"
let runClaims = !child && (modes.isEmpty || modes.contains("claims"))
let runWorkers = !child && (modes.isEmpty || modes.contains("workers"))

func seconds(_ since: ContinuousClock.Instant) -> Double {
  let elapsed = ContinuousClock.now - since
  return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("FleetBench: \(message)\n".utf8))
  exit(1)
}

/// Runs `body` on `threads` threads of their own, each with its own connection, for `duration`
/// seconds or until they counted `limit` operations; returns the operations and the time taken.
func hammer(
  _ address: PostgresAddress, threads: Int, duration: Double, limit: Int = .max,
  _ body: @escaping @Sendable (PostgresConnection, Int) throws(PostgresError) -> Int
) -> (operations: Int, seconds: Double) {
  let stop = Locked(false)
  let total = Locked(0)
  let group = DispatchGroup()
  var connections: [PostgresConnection] = []
  for _ in 0..<threads {
    do throws(HaulError) { connections.append(try PostgresConnection(address)) } catch { fail("\(error)") }
  }
  let start = ContinuousClock.now
  for (index, connection) in connections.enumerated() {
    group.enter()
    nonisolated(unsafe) let owned = connection
    Thread.detachNewThread {
      while !stop.withLock({ $0 }) {
        let count: Int
        do throws(PostgresError) { count = try body(owned, index) } catch {
          fail("\(error.haulError(address))")
        }
        if total.withLock({
          $0 += count; return $0 >= limit
        }) {
          stop.withLock { $0 = true }
        }
      }
      group.leave()
    }
  }
  _ = group.wait(timeout: .now() + duration)
  stop.withLock { $0 = true }
  group.wait()
  return (total.withLock { $0 }, seconds(start))
}

/// The value of `--name VALUE`, if given.
func option(_ name: String) -> String? {
  arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

/// "1,234" (the median of several runs), or "1,234 (1,100–1,300)" with their range.
func summary(_ rates: [Double]) -> String {
  func text(_ value: Double) -> String { Int(value.rounded()).formatted() }
  let sorted = rates.sorted()
  guard let low = sorted.first, let high = sorted.last else { return "-" }
  let middle = sorted.count
  let median = middle % 2 == 1 ? sorted[middle / 2] : (sorted[middle / 2 - 1] + sorted[middle / 2]) / 2
  return sorted.count == 1 ? text(median) : "\(text(median)) (\(text(low))–\(text(high)))"
}

/// The load average over the last minute: the machine is shared, so every measurement says how busy it was.
func loadAverage() -> String {
  let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
  return String(text.split(separator: " ").first ?? "?")
}

// MARK: - Claim and progress rates

func claimBenchmark() {
  let durable = !arguments.contains("--no-fsync")
  let server: TemporaryPostgres
  do { server = try TemporaryPostgres.start(durable: durable) } catch { fail("\(error)") }
  defer { server.stop() }
  let address: PostgresAddress
  let setup: PostgresConnection
  do throws(HaulError) {
    address = try PostgresAddress(server.url())
    setup = try PostgresConnection(address)
    try FleetSchema.migrate(setup)
  } catch { fail("\(error)") }
  let origins = 1000
  let claimers = 32
  let duration = quick ? 3.0 : 6.0
  let runs = option("--runs").flatMap(Int.init) ?? 1
  let sizes =
    option("--sizes").map { $0.split(separator: ",").compactMap { Int($0) } }
    ?? (quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000])
  #if DEBUG
    let build = "debug"
  #else
    let build = "release"
  #endif
  print(
    "claim benchmark (\(build) build): \(claimers) concurrent claimers, \(origins) origins, PostgreSQL with fsync "
      + "\(durable ? "on" : "off"), at most \(duration) s per measurement and never more than half the queue, "
      + "\(runs) run\(runs == 1 ? "" : "s") each (median and range), "
      + "on \(ProcessInfo.processInfo.activeProcessorCount) CPUs, load average \(loadAverage())"
  )
  print(
    "| queued jobs | claims/s (limit 10^6 per origin) | claim+complete/s (4 per origin) | progress writes/s |"
  )
  print("| ---: | ---: | ---: | ---: |")
  var filled = 0
  for size in sizes.sorted() {
    do throws(PostgresError) {
      try setup.query(
        """
        INSERT INTO haul.jobs (gid, url, origin)
        SELECT lpad(to_hex(i), 16, '0'), 'http://h' || (i % $3::int) || '.example/f' || i,
               'http://h' || (i % $3::int) || '.example'
        FROM generate_series($1::bigint, $2::bigint) i
        """, [filled + 1, size, origins])
      filled = size
    } catch { fail("\(error.haulError(address))") }
    var rates: [[Double]] = [[], [], []]
    for _ in 0..<runs {
      let measured = measure(
        address, setup, origins: origins, claimers: claimers, duration: duration, size: size)
      for (index, rate) in measured.enumerated() { rates[index].append(rate) }
    }
    print("| \(size.formatted()) | \(rates.map(summary).joined(separator: " | ")) |")
  }
  print("load average at the end: \(loadAverage())")
}

/// One measurement of each rate on a queue of `size` jobs: claims, claim + complete, progress writes.
/// Claims stop once half the queue is claimed, so the queue stays between `size` and `size / 2`.
func measure(
  _ address: PostgresAddress, _ setup: PostgresConnection, origins: Int, claimers: Int, duration: Double,
  size: Int
) -> [Double] {
  func reset(limit: Int) {
    do throws(PostgresError) { try resetQueue(setup, limit: limit, origins: origins) } catch {
      fail("\(error.haulError(address))")
    }
  }
  // 1. Claims alone, with origins that never fill.
  reset(limit: 1_000_000)
  let claims = hammer(address, threads: claimers, duration: duration, limit: size / 2) {
    connection, index throws(PostgresError) in
    // The statement answers one row whether it claimed or not: count only rows with a job.
    let rows = try connection.query(FleetSQL.claim, ["bench-\(index)", 60.0])
    return rows.count == 1 && rows[0, 0] != nil ? 1 : 0
  }
  // 2. The life of a job: claim, then complete it, with the default limit of 4.
  reset(limit: 4)
  let cycles = hammer(address, threads: claimers, duration: duration, limit: size / 2) {
    connection, index throws(PostgresError) in
    let rows = try connection.query(FleetSQL.claim, ["bench-\(index)", 60.0])
    guard rows.count == 1, let id = rows[0, 0].flatMap({ Int64($0) }),
      let token = rows[0, 7].flatMap({ Int64($0) })
    else { return 0 }
    try connection.query(
      FleetSQL.complete, [id, token, 1000, String(repeating: "a", count: 64), "http://h/final", "f"])
    return 1
  }
  // 3. Progress writes (each renews a lease) on 4 jobs held per writer.
  reset(limit: 1_000_000)
  let held = Locked<[Int: [(Int64, Int64)]]>([:])
  _ = hammer(address, threads: claimers, duration: 60, limit: claimers) {
    connection, index throws(PostgresError) in
    guard held.withLock({ $0[index] == nil }) else { return 0 }
    var leases: [(Int64, Int64)] = []
    for _ in 0..<4 {
      let rows = try connection.query(FleetSQL.claim, ["bench-\(index)", 600.0])
      if let id = rows[0, 0].flatMap({ Int64($0) }), let token = rows[0, 7].flatMap({ Int64($0) }) {
        leases.append((id, token))
      }
    }
    held.withLock { $0[index] = leases }
    return 1
  }
  let leases = held.withLock { $0 }
  let writes = hammer(address, threads: claimers, duration: duration) {
    connection, index throws(PostgresError) in
    var written = 0
    for (id, token) in leases[index] ?? [] {
      let bytes = Int64.random(in: 0..<1 << 30)
      written += try connection.query(
        FleetSQL.renew, [id, token, bytes, Int64(1 << 30), 1e6, nil, nil, 600.0]
      ).count
    }
    return written
  }
  return [claims, cycles, writes].map { Double($0.operations) / $0.seconds }
}

/// Every job queued again, origins' counters recomputed with `limit`, the tables vacuumed (so that
/// each measurement starts from the same shape, without the last one's dead rows).
func resetQueue(_ connection: PostgresConnection, limit: Int, origins: Int) throws(PostgresError) {
  try connection.query(
    "UPDATE haul.jobs SET state = 'queued', granted = 0, lease_token = NULL, lease_expires_at = NULL WHERE state <> 'queued'"
  )
  try connection.query(
    """
    INSERT INTO haul.origins (origin, max_connections, queued, top_priority)
    SELECT origin, $1::int, count(*), 0 FROM haul.jobs GROUP BY origin
    ON CONFLICT (origin) DO UPDATE SET max_connections = $1::int, queued = EXCLUDED.queued, active = 0,
      top_priority = 0, last_claim_at = '-infinity'
    """, [limit])
  try connection.query("VACUUM ANALYZE haul.jobs")
  try connection.query("VACUUM ANALYZE haul.origins")
}

// MARK: - Three workers against one

func workerBenchmark() {
  let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  let haul = directory.appendingPathComponent("haul")
  guard FileManager.default.isExecutableFile(atPath: haul.path) else {
    fail("no haul next to this benchmark (\(haul.path)): swift build -c release first")
  }
  // Long enough that a worker's fixed costs (start, connect, noticing the queue is done, about
  // a second) weigh little against the transfer, as they do in a real fleet.
  let files = quick ? 24 : 48
  let size = quick ? 2_000_000 : 3_000_000
  let rate = 1_000_000
  let httpServer: TestServer
  let database: TemporaryPostgres
  do {
    httpServer = try TestServer()
    database = try TemporaryPostgres.start()
  } catch { fail("\(error)") }
  defer {
    httpServer.stop()
    database.stop()
  }
  var faults = TestFaults()
  faults.bytesPerSecond = rate
  for index in 0..<files {
    httpServer.setResource(
      "/f\(index).bin",
      TestResource(
        body: TestResource.random(size: size, seed: UInt64(index)), etag: "\"\(index)\"", faults: faults))
  }
  print(
    "worker benchmark: \(files) files of \(size / 1_000_000) MB from a server sending \(rate / 1_000_000) MB/s per connection; "
      + "each worker -j 4, the origin's limit raised to 16")
  var times: [Int: Double] = [:]
  for workers in [1, 3] {
    let url: String
    do { url = try database.createDatabase() } catch { fail("\(error)") }
    let work = FileManager.default.temporaryDirectory.appendingPathComponent(
      "fleet-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let ready = DispatchSemaphore(value: 0)
    Task {
      do throws(HaulError) {
        let queue = try await FleetQueue(PostgresAddress(url))
        try await queue.setConnectionLimit(16)
        var requests: [FleetJobRequest] = []
        for index in 0..<files { requests.append(try FleetJobRequest(url: httpServer.url("/f\(index).bin"))) }
        try await queue.add(requests)
        await queue.close()
      } catch { fail("\(error)") }
      ready.signal()
    }
    ready.wait()
    let start = ContinuousClock.now
    let processes = (0..<workers).map { index -> Subprocess in
      do {
        return try Subprocess.spawn(
          haul.path,
          [
            "worker", "--queue", url, "-j", "4", "-d", work.path, "--name", "w\(index)", "--exit-when-idle",
            "-q",
          ],
          stdout: 1, stderr: 2)
      } catch { fail("\(error)") }
    }
    for process in processes { _ = process.waitUntilExit() }
    times[workers] = seconds(start)
    let mb = Double(files * size) / 1e6
    print(
      "  \(workers) worker\(workers == 1 ? " " : "s"): \(String(format: "%.2f", times[workers] ?? 0)) s, "
        + "\(String(format: "%.1f", mb / (times[workers] ?? 1))) MB/s")
  }
  if let one = times[1], let three = times[3] {
    print("  three workers / one: \(String(format: "%.2f", one / three))× the throughput (target ≥ 2.5×)")
  }
}

if child {
  let rest = Array(arguments.drop { $0 != "manager" }.dropFirst())
  Task.detached {
    await managerChild(rest)
    exit(0)
  }
  dispatchMain()
}
if runClaims { claimBenchmark() }
if runWorkers { workerBenchmark() }
