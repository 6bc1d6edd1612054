/// A job held by a worker under a lease: the job as claimed, and the token that proves the lease.
package struct FleetLease: Sendable, Equatable {
  let rowID: Int64
  /// The job's id (16 hex digits).
  package let id: String
  /// The URL as added (with any credentials: only the worker sees it).
  let url: String
  package let directory: String
  package let fileName: String?
  let options: FleetJobOptions
  /// Connections granted by the origin's limit (1 or more).
  package let connections: Int
  /// The fencing token: a statement of this holder only takes effect while it is the job's.
  package let token: Int64
  /// What earlier holders recorded: bytes held and the file they wrote.
  package let bytes: Int64
  package let totalBytes: Int64?
  package let file: String?
  package let origin: String
  /// Claims of the job so far, this one included.
  package let attempts: Int

  /// The options to download with.
  func downloadOptions() throws(HaulError) -> DownloadOptions {
    try options.downloadOptions(connections: connections)
  }
}

/// What a claim found.
package enum FleetClaim: Sendable, Equatable {
  case claimed(FleetLease)
  /// Nothing claimed, but other origins had work (locked by concurrent claimers): try again soon.
  case busy
  /// No origin has both a waiting job and a free connection.
  case idle
}

/// What the queue answered to a lease renewal.
package enum FleetRenewal: Sendable, Equatable {
  /// Still ours; `request` is "pause" or "remove" when another host asked for it.
  case held(request: String?)
  /// Expired and taken back (perhaps already claimed by another worker): stop at once, write nothing more.
  case lost
}

/// Progress written back with a renewal.
package struct FleetProgress: Sendable, Equatable {
  package var bytes: Int64?
  package var totalBytes: Int64?
  package var bytesPerSecond: Double?
  /// The file, relative to the worker's base directory, once known.
  package var file: String?
  package var finalURL: String?

  package init(
    bytes: Int64? = nil, totalBytes: Int64? = nil, bytesPerSecond: Double? = nil, file: String? = nil,
    finalURL: String? = nil
  ) {
    self.bytes = bytes
    self.totalBytes = totalBytes
    self.bytesPerSecond = bytesPerSecond
    self.file = file
    self.finalURL = finalURL
  }
}

extension FleetQueue {
  /// Claims the best claimable job for `worker`, leased for `leaseSeconds`.
  package func claim(worker: String, leaseSeconds: Double) async throws(HaulError) -> FleetClaim {
    let rows = try await client.run { connection throws(PostgresError) in
      try connection.query(FleetSQL.claim, [worker, leaseSeconds])
    }
    return try Self.claimed(from: rows)
  }

  /// The claim statement's answer.
  static func claimed(from rows: PostgresRows) throws(HaulError) -> FleetClaim {
    guard rows.count == 1 else { return .idle }
    let row = rows.row(0)
    guard let rowID = row.int(0), let id = row.text(1), let url = row.text(2), let token = row.int(7) else {
      return row.bool(13) == true ? .busy : .idle
    }
    let options = try FleetJobOptions.decode(row.text(5) ?? "{}")
    return .claimed(
      FleetLease(
        rowID: rowID, id: id, url: url, directory: row.text(3) ?? "", fileName: row.text(4), options: options,
        connections: Int(row.int(6) ?? 1), token: token, bytes: row.int(8) ?? 0, totalBytes: row.int(9),
        file: row.text(10), origin: row.text(11) ?? "", attempts: Int(row.int(12) ?? 1)))
  }

  /// Renews the lease for `leaseSeconds` from now (the database's clock) and records progress.
  package func renew(
    _ lease: FleetLease, progress: FleetProgress, leaseSeconds: Double
  ) async throws(HaulError) -> FleetRenewal {
    let parameters: [(any PostgresBindable)?] = [
      lease.rowID, lease.token, progress.bytes, progress.totalBytes, progress.bytesPerSecond, progress.file,
      progress.finalURL, leaseSeconds,
    ]
    let rows = try await client.run { connection throws(PostgresError) in
      try connection.query(FleetSQL.renew, parameters)
    }
    guard rows.count == 1 else { return .lost }
    return .held(request: rows[0, 0].flatMap { $0.isEmpty ? nil : $0 })
  }

  /// Completes the job with its result, in one transaction with freeing its connections.
  /// - Returns: false when the lease was lost (the job is another worker's now; nothing changed).
  package func complete(_ lease: FleetLease, result: DownloadResult, file: String) async throws(HaulError)
    -> Bool
  {
    let parameters: [(any PostgresBindable)?] = [
      lease.rowID, lease.token, result.totalBytes, result.sha256, result.finalURL, file,
    ]
    return try await finish(FleetSQL.complete, parameters) != nil
  }

  /// Fails the job for good with `error`.
  /// - Returns: false when the lease was lost.
  package func fail(_ lease: FleetLease, error: HaulError, bytes: Int64?) async throws(HaulError) -> Bool {
    let parameters: [(any PostgresBindable)?] = [
      lease.rowID, lease.token, Int(error.category.exitCode), error.message, error.hint, bytes,
    ]
    return try await finish(FleetSQL.fail, parameters) != nil
  }

  /// Gives the job back: queued at once, or delayed by `delay` seconds; `reason` is shown by `ls`.
  /// A pause or remove asked meanwhile is carried out instead.
  /// - Returns: the job's new state, or nil when the lease was lost.
  package func release(
    _ lease: FleetLease, delay: Double = 0, countsAsAttempt: Bool = false, reason: HaulError? = nil,
    bytes: Int64? = nil
  ) async throws(HaulError) -> FleetJob.State? {
    let parameters: [(any PostgresBindable)?] = [
      lease.rowID, lease.token, max(0, delay), countsAsAttempt ? 0 : 1,
      reason.map { Int($0.category.exitCode) },
      reason?.message, reason?.hint, bytes,
    ]
    return try await finish(FleetSQL.release, parameters).flatMap(FleetJob.State.init(rawValue:))
  }

  private func finish(_ sql: String, _ parameters: [(any PostgresBindable)?]) async throws(HaulError)
    -> String?
  {
    let rows = try await client.run { connection throws(PostgresError) in
      try connection.query(sql, parameters)
    }
    return rows.count == 1 ? rows[0, 0] : nil
  }

  /// Takes back expired leases and queues delayed jobs that are due; any worker may run it at
  /// any time (concurrent runs skip each other's rows). Returns how many jobs each step moved.
  @discardableResult
  package func maintain(maxLostLeases: Int = 10) async throws(HaulError) -> (rescued: Int, promoted: Int) {
    try await client.run { connection throws(PostgresError) in
      let rescued = try connection.query(FleetSQL.rescue, [maxLostLeases])
      let promoted = try connection.query(FleetSQL.promote)
      return (rescued.count, Int(promoted.row(0).int(0) ?? 0))
    }
  }
}
