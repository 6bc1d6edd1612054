/// Where a `DownloadManager` keeps its downloads, behind five verbs that fit one process's
/// SQLite file (`SQLiteCatalog`) and a queue many processes share (issue 15's PostgreSQL, where
/// `claimNext` is `SELECT … FOR UPDATE SKIP LOCKED` under a lease).
///
/// The rules every implementation keeps:
/// - Records never hold secrets (`DownloadRecord`); the manager keeps those in memory.
/// - `commit` is all or nothing and durable when it returns: a kill or a power cut after it
///   returns loses nothing it committed; a failure (disk full) leaves everything as it was.
/// - A download runs only while this owner holds its claim: from `claimNext` until a
///   `.finish` change for it is committed. Claims of an owner that is gone are released (the
///   SQLite file: when the next owner opens it, since only one process opens it at a time; a
///   shared queue: when the lease expires).
/// - The queue order is `position`, then `id`.
///
/// Used from one thread at a time (the manager's catalog executor).
package protocol DownloadCatalog: AnyObject {
  /// Every download, in queue order.
  func list() throws(HaulError) -> [DownloadRecord]

  /// Applies `changes` in one transaction: new downloads, changes of state, position, options
  /// or URL, the end of a run with its result (`.finish`, which releases the claim), deletions.
  func commit(_ changes: [RecordChange]) throws(HaulError)

  /// Claims up to `count` runnable downloads (queued and unclaimed, lowest position first) for
  /// this owner and marks them active. May return fewer (others took them).
  func claimNext(_ count: Int) throws(HaulError) -> [DownloadRecord]

  /// Bytes held and sizes of running downloads, for listing (a few times a second at most;
  /// the engine's own state file is what resuming trusts).
  func recordProgress(_ progress: [ProgressRecord]) throws(HaulError)

  /// Ends this owner's use; nothing may be called afterwards.
  func close()
}
