import FoundationEssentials

extension DownloadManager {
  /// Lists a catalog's downloads without opening it for changes: one at a time in queue order,
  /// so memory does not grow with the list; nothing is written; no network. Works while another
  /// process owns the catalog (`haul run`, the daemon), whose running downloads show the bytes
  /// it last recorded (a few times a second). What `haul ls` does.
  ///
  /// ```swift
  /// try DownloadManager.read(catalog: catalog) { download in
  ///   print(download.id, download.state, download.bytes, download.totalBytes ?? 0, download.url)
  /// }
  /// ```
  ///
  /// With no owner alive, downloads the catalog lists as active are reported queued (they were
  /// interrupted; the next manager continues them). Bytes held come from each download's state
  /// file, as at a launch (for a running one, from what its owner recorded).
  ///
  /// - Throws: `HaulError` as `init(catalog:)` does for a file that is not a Haul catalog, is
  ///   corrupt or comes from a newer Haul. A catalog that does not exist has no downloads.
  public static func read(catalog: URL, _ body: (DownloadSnapshot) -> Void) throws(HaulError) {
    let path = catalog.standardizedFileURL.path
    let owned = CatalogLock.ownerIsAlive(catalog: path)
    var saved = SavedProgressReader()
    var waiting = 0
    _ = try SQLiteCatalog.read(path: path) { record in
      var record = record
      if record.state == .active, !owned { record.state = .queued }
      saved.update(&record, running: record.state == .active)
      var queueIndex: Int?
      if record.state.isWaiting {
        queueIndex = waiting
        waiting += 1
      }
      var snapshot = DownloadSnapshot(
        record: record, live: nil, queueIndex: queueIndex,
        needsCredentials: record.error == ManagerStateMachine.credentialsError)
      snapshot.checkFinishedFile()
      body(snapshot)
    }
  }
}
