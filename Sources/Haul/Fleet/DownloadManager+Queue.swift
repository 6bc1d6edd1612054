import FoundationEssentials

extension DownloadManager {
  /// A manager whose downloads live in a fleet's PostgreSQL queue instead of a catalog file:
  /// it adds, lists, pauses and runs them like any manager, and claims them under leases next to
  /// `haul worker` processes and other managers on other hosts (within the origins' connection
  /// limits), so no two of them ever run the same download.
  ///
  /// ```swift
  /// let mirror = URL(fileURLWithPath: "/srv/mirror")
  /// let manager = try DownloadManager(
  ///   queue: PostgresAddress("postgresql://haul@db.example/haul"), baseDirectory: mirror)
  /// let id = try await manager.add("https://example.com/a.iso", to: .directory(mirror))
  /// ```
  ///
  /// Every destination must lie under `baseDirectory` (stored relative to it, as workers read
  /// it). Downloads that need a credential only this process may hold (a URL password, an
  /// Authorization, Proxy-Authorization or Cookie header) are refused: add those with
  /// `FleetQueue`, which keeps them in the queue. A pause or removal asked from another host,
  /// or a lease this process lost, pauses (or removes) the download here; what other hosts do
  /// with the listed downloads shows in `downloads()` within a quarter lease. `waitUntilIdle()`
  /// waits for this manager's own runs: downloads running elsewhere are not waited for. The
  /// list is the whole queue's: `LaunchPolicy.pause` pauses every waiting and running job of
  /// it, other hosts' too (their workers stop them within a second).
  public convenience init(
    queue address: PostgresAddress, baseDirectory: URL, leaseSeconds: Double = 30,
    configuration: Configuration = Configuration()
  ) throws(HaulError) {
    guard leaseSeconds >= 2, leaseSeconds <= 3600 else {
      throw HaulError(.invalidInput, "the lease must be 2 to 3600 seconds")
    }
    let link = CatalogLink()
    let catalog = try PostgresCatalog(
      address: address, baseDirectory: baseDirectory, owner: FleetWorker.defaultName,
      leaseSeconds: leaseSeconds,
      link: link)
    try self.init(
      catalog: catalog, at: URL(string: address.redacted) ?? baseDirectory, configuration: configuration)
    link.connect(
      news: { [weak self] news in
        Task {
          guard let self else { return }
          switch news {
          case .lost(let id), .pause(let id): try? await self.pause(id)
          case .remove(let id): try? await self.cancel(id)
          case .changed(let changes, let commits):
            await self.core.changedElsewhere(changes, link: link, commits: commits)
          case .claimable:
            await self.core.reschedule()
          }
        }
      },
      secrets: { [core] id, secrets in core.shared.withLock { $0.secrets[id] = secrets } })
  }
}

extension ManagerCore {
  /// Downloads this manager does not run that other owners of a shared catalog changed: the
  /// state machine takes their new state without a commit (the catalog already has it). News
  /// read before this manager's last commit may be stale and is dropped (the next look brings
  /// it again); downloads that started here meanwhile are left alone.
  func changedElsewhere(_ changes: [CatalogLink.Elsewhere], link: CatalogLink, commits: Int) {
    let current = link.state.withLock { $0.commits == commits }
    guard current else { return }
    let (actions, applied) = shared.withLock { shared -> ([Action], [CatalogLink.Elsewhere]) in
      let applied = changes.filter {
        shared.machine.runs[$0.id] == nil && shared.machine.records[$0.id] != nil
      }
      let transition = Transition(changes: applied.map { .finish($0.id, $0.result) })
      return (shared.machine.apply(transition), applied)
    }
    link.state.withLock { state in
      for change in applied {
        state.known[change.id] = CatalogLink.Seen(state: change.result.state, bytes: change.result.bytes)
      }
    }
    hub.publish(
      applied.map { change in
        switch change.result.state {
        case .queued: .queued(change.id)
        case .paused: .paused(change.id)
        case .removed: .removed(change.id)
        case .failed: .failed(change.id, (change.result.error ?? Self.failedElsewhere).haulError)
        case .active, .complete: .changed(change.id)
        }
      })
    carryOut(actions)
  }

  private static let failedElsewhere = StoredError(
    category: HaulError.Category.generic.exitCode, message: "failed on another host", hint: nil)
}
