import FoundationEssentials

/// What a `PostgresCatalog`, its heartbeat thread and its `DownloadManager` share: this owner's
/// leases, the manager's view of the downloads it does not hold (so that the heartbeat notices
/// what other hosts change), and where news goes. Everything behind one lock; the handlers are
/// called with no lock held.
final class CatalogLink: Sendable {
  /// A lease of this owner: the job's row and its fencing token.
  struct Lease: Sendable, Equatable {
    var row: Int64
    var token: Int64
  }

  /// A request on a lease (`pause`, `remove`), by token.
  struct Request: Hashable, Sendable {
    var token: Int64
    var kind: String
  }

  /// What the manager last knew of a download it does not run.
  struct Seen: Sendable, Equatable {
    var state: DownloadState
    var bytes: Int64
  }

  struct State: Sendable {
    var held: [DownloadID: Lease] = [:]
    /// Leases found lost: the later changes of their runs are not recorded.
    var lost: Set<DownloadID> = []
    /// Downloads the manager lists but does not run, as it knows them.
    var known: [DownloadID: Seen] = [:]
    /// Commits and claims so far: news read before the last one is stale.
    var commits = 0
    /// Requests this owner made on its own leases (not news to it) and those already passed on.
    var ownRequests: Set<Request> = []
    var reported: Set<Request> = []
  }

  /// News from the queue for the manager.
  enum News: Sendable {
    /// The lease was lost (expired, taken back): stop writing.
    case lost(DownloadID)
    /// Another host asked for a pause or a removal of a download this owner runs.
    case pause(DownloadID)
    case remove(DownloadID)
    /// Downloads this owner does not run that others changed, as the queue has them, read after
    /// `commits` commits of this owner.
    case changed([Elsewhere], commits: Int)
    /// Downloads the manager has queued are waiting in the queue: a claim may get them now
    /// (one that came up short before, while another owner's lease had not yet expired, is not
    /// tried again by itself).
    case claimable
  }

  /// A download as another owner left it.
  struct Elsewhere: Sendable, Equatable {
    var id: DownloadID
    var result: RunResult
  }

  private struct Handlers: Sendable {
    var news: (@Sendable (News) -> Void)?
    var secrets: (@Sendable (DownloadID, Secrets) -> Void)?
  }

  let state = Locked(State())
  private let handlers = Locked(Handlers())

  /// Set once the manager exists.
  func connect(
    news: @escaping @Sendable (News) -> Void, secrets: @escaping @Sendable (DownloadID, Secrets) -> Void
  ) {
    handlers.withLock {
      $0.news = news
      $0.secrets = secrets
    }
  }

  func report(_ news: News) {
    let handler = handlers.withLock { $0.news }
    handler?(news)
  }

  /// Hands the manager the credentials of a job it claimed (stored in the queue by `FleetQueue`);
  /// false when no manager listens yet (the job is then given back).
  func provide(_ secrets: Secrets, for id: DownloadID) -> Bool {
    guard let handler = handlers.withLock({ $0.secrets }) else { return false }
    handler(id, secrets)
    return true
  }

  /// Leases found lost elsewhere (a renewal or progress write that matched nothing).
  func lost(_ ids: [DownloadID]) {
    let found = state.withLock { state in
      ids.filter { id in
        guard state.held.removeValue(forKey: id) != nil else { return false }
        state.lost.insert(id)
        return true
      }
    }
    for id in found { report(.lost(id)) }
  }

  /// Whether a download's state is one other hosts may change while this owner does not run it.
  static func watched(_ state: DownloadState) -> Bool { state != .complete && state != .removed }
}
