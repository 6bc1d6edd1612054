import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The download manager's catalog on a fleet queue: `DownloadManager` keeps its downloads in
/// PostgreSQL, next to `haul worker` processes and other managers, and claims them under the
/// same leases.
///
/// How the manager's five verbs map onto the queue:
/// - `claimNext` is the fleet's claim (by origin, then job, with SKIP LOCKED, within the origins'
///   connection limits), so two owners never take the same job; the claim is a lease that
///   `CatalogHeartbeat` renews every quarter lease on a connection of its own, whatever the
///   manager is doing. A claimed job may be one another host added: its credentials, which
///   `FleetQueue` keeps in the queue, go to the manager's memory only.
/// - `commit` is one transaction. A change to a job another owner holds becomes a request its
///   holder acts on (pause, remove), never a state that would take the job from it.
/// - `.finish` ends this owner's lease (matching its token); when the lease was lost meanwhile,
///   the outcome is not recorded (the job is another owner's now).
/// - Paths are stored relative to the base directory, as `haul worker -d BASE` reads them.
/// - What reaches the manager behind its back goes through `CatalogLink`: a lost lease, a pause
///   or removal asked from another host, and the new state of downloads other owners ran.
///
/// Records never hold secrets, as for every catalog: a download whose URL password or secret
/// header only this process knows is refused (workers elsewhere could not run it), with a hint
/// to add it with `FleetQueue`.
///
/// Threads: the manager calls it from its catalog executor, one call at a time; the heartbeat
/// shares only the link (behind its lock) and has its own connection.
final class PostgresCatalog: DownloadCatalog {
  let address: PostgresAddress
  let owner: String
  let leaseSeconds: Double
  let rows: CatalogRows
  private let connection: PostgresConnection
  private let link: CatalogLink
  private let heartbeat: CatalogHeartbeat

  private typealias Statement = (sql: String, parameters: [(any PostgresBindable)?])

  init(
    address: PostgresAddress, baseDirectory: URL, owner: String, leaseSeconds: Double = 30, link: CatalogLink
  ) throws(HaulError) {
    self.address = address
    self.owner = owner
    self.leaseSeconds = leaseSeconds
    self.link = link
    rows = CatalogRows(baseDirectory: baseDirectory)
    connection = try PostgresConnection(address, applicationName: "haul manager \(owner)")
    try FleetSchema.migrate(connection)
    heartbeat = try CatalogHeartbeat(
      address: address, owner: owner, leaseSeconds: leaseSeconds, link: link, rows: rows)
  }

  // MARK: - DownloadCatalog

  func list() throws(HaulError) -> [DownloadRecord] {
    let found = try run { () throws(PostgresError) in
      try connection.query(FleetSQL.records + " ORDER BY position, id")
    }
    let records = found.all.compactMap(rows.record)
    link.state.withLock { state in
      for record in records {
        state.known[record.id] = CatalogLink.Seen(state: record.state, bytes: record.bytes)
      }
    }
    return records
  }

  func commit(_ changes: [RecordChange]) throws(HaulError) {
    guard !changes.isEmpty else { return }
    let (held, lost) = link.state.withLock { ($0.held, $0.lost) }
    var statements: [Statement] = []
    var inserts: [DownloadRecord] = []
    for change in changes {
      if case .insert(let record) = change {
        inserts.append(record)
        continue
      }
      if !inserts.isEmpty {
        statements.append((FleetSQL.insertRecords, try insertParameters(inserts)))
        inserts = []
      }
      // The run of a lost lease may still report; nothing of it is recorded.
      if lost.contains(change.id) { continue }
      statements += try self.statements(for: change, held: held[change.id])
    }
    if !inserts.isEmpty { statements.append((FleetSQL.insertRecords, try insertParameters(inserts))) }
    let all = statements
    try run { () throws(PostgresError) in
      try connection.transaction { () throws(PostgresError) in
        for statement in all { try connection.query(statement.sql, statement.parameters) }
      }
    }
    link.state.withLock { state in
      state.commits += 1
      for change in changes { Self.note(change, in: &state) }
    }
  }

  /// What a committed change tells the link: leases ended, requests of this owner's own, the
  /// manager's view of downloads it does not run.
  private static func note(_ change: RecordChange, in state: inout CatalogLink.State) {
    let id = change.id
    switch change {
    case .insert(let record):
      state.known[id] = CatalogLink.Seen(state: record.state, bytes: record.bytes)
    case .state(_, let new, _):
      if let lease = state.held[id] {
        if new == .paused { state.ownRequests.insert(CatalogLink.Request(token: lease.token, kind: "pause")) }
        if new == .removed {
          state.ownRequests.insert(CatalogLink.Request(token: lease.token, kind: "remove"))
        }
      } else if !state.lost.contains(id) {
        state.known[id] = CatalogLink.Seen(state: new, bytes: state.known[id]?.bytes ?? 0)
      }
    case .finish(_, let result):
      state.held[id] = nil
      state.lost.remove(id)
      state.known[id] = CatalogLink.Seen(state: result.state, bytes: result.bytes)
    case .delete:
      state.held[id] = nil
      state.lost.remove(id)
      state.known[id] = nil
    case .position, .options, .url:
      break
    }
  }

  func claimNext(_ count: Int) throws(HaulError) -> [DownloadRecord] {
    var leases: [FleetLease] = []
    var busy = 0
    claiming: while leases.count < count {
      let answer = try run { () throws(PostgresError) in
        try connection.query(FleetSQL.claim, [owner, leaseSeconds])
      }
      switch try FleetQueue.claimed(from: answer) {
      case .claimed(let lease):
        leases.append(lease)
      case .busy:
        // Other claimers held the origins a moment ago: a few quick tries, then fewer than asked.
        busy += 1
        guard busy <= 3 else { break claiming }
        usleep(5_000)
      case .idle:
        break claiming
      }
    }
    guard !leases.isEmpty else { return [] }
    let ids = PostgresTextArray(leases.map { String($0.rowID) })
    let found = try run { () throws(PostgresError) in
      try connection.query(FleetSQL.records + " WHERE id = ANY($1::bigint[])", [ids])
    }
    var records: [DownloadRecord] = []
    var unused = leases
    for row in found.all {
      guard var record = rows.record(row),
        let index = unused.firstIndex(where: { $0.id == record.id.description })
      else { continue }
      let lease = unused.remove(at: index)
      if !record.secrets.isEmpty {
        let (_, headers) = rows.split(row.text(4), connections: row.int(5))
        let secrets = Secrets(
          url: record.secrets.contains(.urlPassword) ? row.text(1) : nil, headers: headers)
        guard link.provide(secrets, for: record.id) else {
          unused.append(lease)
          continue
        }
      }
      // The origin's limit granted this many connections.
      record.options.connections = lease.connections
      record.state = .active
      records.append(record)
      link.state.withLock { state in
        state.held[record.id] = CatalogLink.Lease(row: lease.rowID, token: lease.token)
        state.known[record.id] = nil
      }
    }
    // Leases of rows that vanished or could not run here go back at once.
    for lease in unused { give(back: CatalogLink.Lease(row: lease.rowID, token: lease.token)) }
    link.state.withLock { $0.commits += 1 }
    return records
  }

  func recordProgress(_ progress: [ProgressRecord]) throws(HaulError) {
    let held = link.state.withLock { $0.held }
    var lost: [DownloadID] = []
    for item in progress {
      guard let lease = held[item.id] else { continue }
      let parameters: [(any PostgresBindable)?] = [
        lease.row, lease.token, item.bytes, item.totalBytes, nil, item.file.flatMap(rows.relative), nil,
        leaseSeconds,
      ]
      let answer = try run { () throws(PostgresError) in try connection.query(FleetSQL.renew, parameters) }
      if answer.count == 0 { lost.append(item.id) }
    }
    link.lost(lost)
  }

  func close() {
    heartbeat.stop()
    // Claims the manager did not end (it ends them all when it closes normally) go back to the
    // queue at once instead of waiting for their leases.
    let held = link.state.withLock { state in
      defer { state.held = [:] }
      return state.held
    }
    for lease in held.values { give(back: lease) }
  }

  /// Queues the job again at once, not counting the claim as an attempt.
  private func give(back lease: CatalogLink.Lease) {
    _ = try? connection.query(FleetSQL.release, [lease.row, lease.token, 0.0, 1, nil, nil, nil, nil])
  }

  // MARK: - Changes as statements

  private func statements(for change: RecordChange, held: CatalogLink.Lease?) throws(HaulError) -> [Statement]
  {
    let id = change.id.description
    switch change {
    case .insert:
      return []
    case .state(_, let state, let error):
      return [
        (
          FleetSQL.setState,
          [id, state.rawValue, error.map { Int($0.category) }, error?.message, error?.hint]
        )
      ]
    case .position(_, let position):
      return [(FleetSQL.setPosition, [id, position])]
    case .options(_, let options, let secrets):
      guard secrets.isDisjoint(with: .inOptions) else { throw Self.secretsRefused }
      let fleet = FleetJobOptions(options.options(secretHeaders: [:]))
      return [(FleetSQL.setOptions, [id, fleet.json, min(64, max(1, options.connections ?? 1))])]
    case .url(_, let url, let secrets):
      guard !secrets.contains(.urlPassword) else { throw Self.secretsRefused }
      return [(FleetSQL.setURL, [id, url, FleetJobRequest.origin(of: url)])]
    case .finish(_, let result):
      let fields: [(any PostgresBindable)?] = [
        result.state.rawValue, result.bytes, result.totalBytes, result.file.flatMap(rows.relative),
        result.error.map { Int($0.category) }, result.error?.message, result.error?.hint, result.sha256,
        result.finalURL,
      ]
      if let held { return [(FleetSQL.finishClaim, [held.row, held.token] + fields)] }
      return [(FleetSQL.setResult, [id, nil] + fields)]
    case .delete:
      // A run of this owner's may write a moment longer: the row is gone, so nobody else takes the job.
      if let held { return [(FleetSQL.deleteHeld, [held.row, held.token])] }
      return [(FleetSQL.deleteRecord, [id])]
    }
  }

  private func insertParameters(_ records: [DownloadRecord]) throws(HaulError) -> [(any PostgresBindable)?] {
    var columns = [[String?]](repeating: [], count: 10)
    for record in records {
      guard record.secrets.isEmpty else { throw Self.secretsRefused }
      let (directory, name) = try rows.place(record.destination)
      let values: [String?] = [
        record.id.description, record.url, FleetJobRequest.origin(of: record.url), directory, name,
        FleetJobOptions(record.options.options(secretHeaders: [:])).json,
        String(min(64, max(1, record.options.connections ?? 1))), String(record.position),
        record.state == .active ? DownloadState.queued.rawValue : record.state.rawValue,
        String(record.addedAt),
      ]
      for (index, value) in values.enumerated() { columns[index].append(value) }
    }
    return columns.map { PostgresTextArray($0) }
  }

  static let secretsRefused = HaulError(
    .invalidInput,
    "a shared queue cannot take a download whose URL password, password (-u), cookies or Authorization, "
      + "Proxy-Authorization or Cookie header only this process may know",
    hint: "workers on other hosts could not run it; add it with FleetQueue (haul add --queue … -H …), "
      + "which stores its headers in the queue")

  private func run<T>(_ body: () throws(PostgresError) -> T) throws(HaulError) -> T {
    do throws(PostgresError) {
      return try body()
    } catch {
      throw error.haulError(address)
    }
  }
}
