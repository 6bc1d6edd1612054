import Dispatch
import FoundationEssentials

/// A `PostgresCatalog`'s thread of its own, on a connection of its own, every quarter lease:
/// renews this owner's leases (reporting those lost and requests from other hosts), takes back
/// expired leases and queues due retries (a manager alone on a queue must, or its own dead runs
/// would stay active forever), and reads what other owners changed about the downloads the
/// manager lists but does not run. When no renewal got through for three quarters of a lease
/// (the database unreachable), every lease is reported lost, so that writing stops before
/// another owner may claim the jobs.
final class CatalogHeartbeat: Sendable {
  private let leaseSeconds: Double
  private let link: CatalogLink
  private let rows: CatalogRows
  private let stopped = Locked(false)
  private let wake = DispatchSemaphore(value: 0)
  private let done = DispatchSemaphore(value: 0)
  /// Where the next look at other owners' changes starts (a long list is read in parts).
  private let cursor = Locked(0)

  /// Downloads read per look at other owners' changes.
  static let pollBatch = 2_000

  init(
    address: PostgresAddress, owner: String, leaseSeconds: Double, link: CatalogLink, rows: CatalogRows
  ) throws(HaulError) {
    self.leaseSeconds = leaseSeconds
    self.link = link
    self.rows = rows
    let connection = try PostgresConnection(address, applicationName: "haul manager \(owner) heartbeat")
    nonisolated(unsafe) let owned = connection  // only the heartbeat thread uses it from now on
    // A queue of its own: the loop occupies one of dispatch's threads for the catalog's life.
    DispatchQueue(label: "haul.catalog.heartbeat").async { [self] in
      loop(owned)
      done.signal()
    }
  }

  func stop() {
    stopped.withLock { $0 = true }
    wake.signal()
    done.wait()
  }

  private func loop(_ connection: PostgresConnection) {
    var lastRenewed = LeaseClock.seconds()
    while !stopped.withLock({ $0 }) {
      _ = wake.wait(timeout: .now() + leaseSeconds / 4)
      if stopped.withLock({ $0 }) { return }
      _ = try? connection.query(FleetSQL.rescue, [10])
      _ = try? connection.query(FleetSQL.promote)
      let sentAt = LeaseClock.seconds()
      if renew(connection) {
        lastRenewed = sentAt
      } else if LeaseClock.seconds() - lastRenewed >= leaseSeconds * LeaseTimer.writeFraction {
        link.lost(Array(link.state.withLock { $0.held.keys }))
      }
      look(connection)
    }
  }

  /// Renews every lease at once; false when the database did not answer.
  private func renew(_ connection: PostgresConnection) -> Bool {
    let held = link.state.withLock { $0.held }
    guard !held.isEmpty else { return true }
    let ids = PostgresTextArray(held.values.map { String($0.row) })
    let tokens = PostgresTextArray(held.values.map { String($0.token) })
    guard let answer = try? connection.query(FleetSQL.renewMany, [ids, tokens, leaseSeconds]) else {
      return false
    }
    var still: [Int64: String] = [:]
    for row in answer.all { if let id = row.int(0) { still[id] = row.text(1) ?? "" } }
    link.lost(held.filter { still[$0.value.row] == nil }.map(\.key))
    // Requests other hosts made (this owner's own pauses and removals are not news), each once.
    let news = link.state.withLock { state in
      held.compactMap { id, lease -> CatalogLink.News? in
        guard let kind = still[lease.row], !kind.isEmpty else { return nil }
        let request = CatalogLink.Request(token: lease.token, kind: kind)
        guard !state.ownRequests.contains(request), state.reported.insert(request).inserted else {
          return nil
        }
        return kind == "remove" ? .remove(id) : .pause(id)
      }
    }
    for item in news { link.report(item) }
    return true
  }

  /// Reads the downloads the manager lists but does not run, and reports those whose state (or,
  /// running elsewhere, bytes) another owner changed.
  private func look(_ connection: PostgresConnection) {
    let (known, commits) = link.state.withLock { state in
      (state.known.filter { CatalogLink.watched($0.value.state) }, state.commits)
    }
    guard !known.isEmpty else { return }
    let ids = known.keys.sorted()
    let start = cursor.withLock { cursor in
      if cursor >= ids.count { cursor = 0 }
      defer { cursor += Self.pollBatch }
      return cursor
    }
    let part = ids[start..<min(ids.count, start + Self.pollBatch)]
    let parameter = PostgresTextArray(part.map(\.description))
    guard
      let answer = try? connection.query(FleetSQL.records + " WHERE gid = ANY($1::text[])", [parameter])
    else { return }
    var changed: [CatalogLink.Elsewhere] = []
    var claimable = false
    for row in answer.all {
      guard let record = rows.record(row), let seen = known[record.id] else { continue }
      let now = CatalogLink.Seen(state: record.state, bytes: record.bytes)
      if seen.state == .queued, record.state == .queued { claimable = true }
      guard now != seen else { continue }
      let result = RunResult(
        state: record.state, bytes: record.bytes, totalBytes: record.totalBytes, file: record.file,
        error: record.error, sha256: record.sha256, finalURL: record.finalURL, finishedAt: record.finishedAt)
      changed.append(CatalogLink.Elsewhere(id: record.id, result: result))
    }
    if !changed.isEmpty { link.report(.changed(changed, commits: commits)) }
    if claimable { link.report(.claimable) }
  }
}
