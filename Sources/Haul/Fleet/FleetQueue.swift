import FoundationEssentials

/// A download queue in PostgreSQL that many `haul worker` processes, on many hosts, drain
/// together: each job is done once, a dead worker's jobs are taken over when its lease expires,
/// and at most `connectionLimit` connections per origin are open over the whole fleet.
///
/// ```swift
/// let queue = try await FleetQueue(PostgresAddress("postgresql://haul@db.example/haul"))
/// let ids = try await queue.add([try FleetJobRequest(url: "https://example.com/a.iso", directory: "isos")])
/// try await queue.pause(ids)                 // from any host; a running job stops within a second
/// for job in try await queue.jobs() { print(job.id, job.state, job.worker ?? "-", job.bytes) }
/// ```
///
/// The schema (`haul.*`) is created and migrated on first use. Every method is one statement
/// (one transaction) against the server; the queue holds one connection, reopened when it breaks.
public final class FleetQueue: Sendable {
  public let address: PostgresAddress
  let client: PostgresClient

  /// Connects (loading libpq) and creates or migrates the schema.
  /// - Throws: `HaulError`: libpq missing (with what to install), server unreachable, credentials refused.
  public init(_ address: PostgresAddress, applicationName: String = "haul") async throws(HaulError) {
    self.address = address
    self.client = PostgresClient(address, applicationName: applicationName)
    try await client.run { connection throws(PostgresError) in _ = connection.serverVersion }
  }

  /// Closes the connection now (it is also closed when the queue is released).
  public func close() async { await client.close() }

  // MARK: - Adding and listing

  /// Adds jobs (in statements of `batchSize`, each atomic); returns their ids in order.
  /// `paused`: added paused, so that no worker starts one before `resume`.
  @discardableResult
  public func add(_ requests: [FleetJobRequest], paused: Bool = false) async throws(HaulError) -> [String] {
    var ids: [String] = []
    ids.reserveCapacity(requests.count)
    var start = requests.startIndex
    while start < requests.endIndex {
      let batch = Array(requests[start..<min(start + Self.batchSize, requests.endIndex)])
      do throws(HaulError) {
        ids += try await addBatch(batch, paused: paused)
      } catch {
        guard ids.isEmpty else {
          throw HaulError(
            error.category, "added \(ids.count) of \(requests.count) jobs, then: \(error.message)",
            hint: error.hint,
            underlying: error)
        }
        throw error
      }
      start += batch.count
    }
    return ids
  }

  static let batchSize = 5_000

  private func addBatch(_ batch: [FleetJobRequest], paused: Bool) async throws(HaulError) -> [String] {
    let columns: [PostgresTextArray] = [
      PostgresTextArray(batch.map { $0.url }),
      PostgresTextArray(batch.map { FleetJobRequest.origin(of: $0.url) }),
      PostgresTextArray(batch.map { $0.directory }),
      PostgresTextArray(batch.map { $0.fileName }),
      PostgresTextArray(batch.map { FleetJobOptions($0.options).json }),
      PostgresTextArray(batch.map { String($0.options.connections ?? 1) }),
      PostgresTextArray(batch.map { String($0.priority) }),
    ]
    // A 64-bit random id colliding is unlikely but not impossible: new ids, and the batch again.
    for attempt in 1...3 {
      let ids = batch.map { _ in Self.newID() }
      let parameters: [(any PostgresBindable)?] = [PostgresTextArray(ids)] + columns + [paused]
      do throws(HaulError) {
        return try await client.run { connection throws(PostgresError) in
          try connection.query(FleetSQL.add, parameters)
          return ids
        }
      } catch {
        let unique = (error.underlying as? PostgresError)?.sqlState == "23505"
        if !unique || attempt == 3 { throw error }
      }
    }
    return []
  }

  /// 16 lower-case hex digits from the system's random generator.
  static func newID() -> String {
    let value = UInt64.random(in: 0...UInt64.max)
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  /// Jobs in the order added: all, or those in `ids`; removed ones only when asked; at most
  /// `limit`, starting after the job `after` (to page through a large queue).
  public func jobs(
    _ ids: [String]? = nil, includeRemoved: Bool = false, limit: Int = 100_000, after: String? = nil
  ) async throws(HaulError) -> [FleetJob] {
    let parameters: [(any PostgresBindable)?] = [
      ids.map { PostgresTextArray($0) }, includeRemoved, after, limit,
    ]
    let rows = try await client.run { connection throws(PostgresError) in
      try connection.query(FleetSQL.list, parameters)
    }
    return rows.all.map(FleetSQL.job)
  }

  /// How many jobs are in each state.
  public func counts() async throws(HaulError) -> [FleetJob.State: Int] {
    let rows = try await client.run { connection throws(PostgresError) in
      try connection.query("SELECT state, count(*) FROM haul.jobs GROUP BY state")
    }
    var counts: [FleetJob.State: Int] = [:]
    for row in rows.all {
      if let state = row.text(0).flatMap(FleetJob.State.init(rawValue:)) {
        counts[state] = Int(row.int(1) ?? 0)
      }
    }
    return counts
  }

  // MARK: - Control from any host

  /// Pauses jobs (nil: every job that is not finished). Waiting ones are paused at once; a
  /// worker holding one pauses it at its next progress write (within a second) and saves it.
  /// Returns the ids that were (or will be) paused.
  @discardableResult
  public func pause(_ ids: [String]? = nil) async throws(HaulError) -> [String] {
    try await change(FleetSQL.pause, ids)
  }

  /// Puts paused jobs back in the queue (and cancels a pause not yet acted on).
  @discardableResult
  public func resume(_ ids: [String]? = nil) async throws(HaulError) -> [String] {
    try await change(FleetSQL.resume, ids)
  }

  /// Queues failed jobs again from scratch (their error and attempt counts cleared).
  @discardableResult
  public func retry(_ ids: [String]? = nil) async throws(HaulError) -> [String] {
    try await change(FleetSQL.retry, ids)
  }

  /// Removes jobs from the queue (they stay listed with `includeRemoved`). A worker holding one
  /// stops it and deletes its partial file. Files already finished are left alone.
  @discardableResult
  public func remove(_ ids: [String]) async throws(HaulError) -> [String] {
    try await change(FleetSQL.remove, ids)
  }

  /// Sets the priority of jobs (higher runs first); a waiting job moves up or down at once.
  @discardableResult
  public func setPriority(_ priority: Int, of ids: [String]) async throws(HaulError) -> [String] {
    guard (-1_000_000...1_000_000).contains(priority) else {
      throw HaulError(.invalidInput, "priorities go from -1000000 to 1000000 (asked for \(priority))")
    }
    return try await change(FleetSQL.reprioritise, ids, extra: [priority])
  }

  /// The most connections the whole fleet opens to one origin (`https://host[:port]`), or with
  /// `origin` nil, the default for every origin without a limit of its own (4 at first).
  /// Jobs already running keep their connections; new claims respect the limit.
  public func setConnectionLimit(_ limit: Int, for origin: String? = nil) async throws(HaulError) {
    guard (1...10_000).contains(limit) else {
      throw HaulError(.invalidInput, "a connection limit goes from 1 to 10000 (asked for \(limit))")
    }
    let key = try origin.map { (text: String) throws(HaulError) -> String in
      FleetJobRequest.origin(of: try RequestURL.normalize(text))
    }
    try await client.run { connection throws(PostgresError) in
      if let key {
        try connection.query(FleetSQL.setOriginLimit, [key, limit])
      } else {
        try connection.query(FleetSQL.setDefaultLimit, [limit])
      }
    }
  }

  /// Connection limits: the default, and each origin's limit and connections in use now.
  public func connectionLimits() async throws(HaulError) -> (
    defaultLimit: Int, origins: [(origin: String, limit: Int, active: Int, queued: Int)]
  ) {
    let (defaults, rows) = try await client.run { connection throws(PostgresError) in
      (
        try connection.query("SELECT value FROM haul.meta WHERE key = 'default_origin_connections'"),
        try connection.query(
          "SELECT origin, max_connections, active, queued FROM haul.origins ORDER BY origin")
      )
    }
    let origins = rows.all.map { row in
      (row.text(0) ?? "", Int(row.int(1) ?? 0), Int(row.int(2) ?? 0), Int(row.int(3) ?? 0))
    }
    return (Int(defaults.count == 1 ? defaults[0, 0] ?? "4" : "4") ?? 4, origins)
  }

  private func change(
    _ sql: String, _ ids: [String]?, extra: [any PostgresBindable] = []
  ) async throws(HaulError) -> [String] {
    if let ids {
      for id in ids where !FleetSQL.isJobID(id) {
        throw HaulError(.invalidInput, "'\(id)' is not a job id (16 hex digits, as `haul ls` shows)")
      }
    }
    let parameters: [(any PostgresBindable)?] = [ids.map { PostgresTextArray($0) }] + extra
    let rows = try await client.run { connection throws(PostgresError) in
      try connection.query(sql, parameters)
    }
    return rows.all.compactMap { $0.text(0) }
  }
}
