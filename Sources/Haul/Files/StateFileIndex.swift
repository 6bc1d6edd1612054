import FoundationEssentials

/// The state files (`NAME.haul`) of the directories this process downloads into, so that a
/// download into a directory finds an interrupted download of its URL without reading the whole
/// directory again: a thousand files into one directory would otherwise read it a thousand times
/// (each read a few thousand entries, 10 % of the CPU time of such a batch).
///
/// A directory is read at the first download into it in this process; the state files this
/// process writes there later are added as they appear, and removed as they go. One that another
/// process writes after that read is not seen here: a download of its URL then learns its name
/// from the first response, finds the partial there and starts it over from byte 0 (never a
/// splice). While that other process runs, its lock refuses a second download of the file anyway.
/// `SavedProgress.all(in:)` always reads the directory itself.
enum StateFileIndex {
  /// Directory (as `DownloadPaths.directory` spells it) → the names of its state files
  /// (`NAME.haul`).
  private static let directories = Locked([String: Set<String>]())

  /// The state files in `directory`, sorted, as full paths.
  static func stateFiles(in directory: String) -> [String] {
    let key = DownloadPaths(directory: directory, name: "x").directory
    var names = directories.withLock { $0[key] }
    if names == nil {
      // Read outside the lock: other directories' downloads need not wait for this one.
      let read = Set(DownloadPaths.stateFiles(in: key).map { DownloadPaths(target: $0).name })
      names = directories.withLock { known in
        // A download into the same directory that started meanwhile may have read it too.
        if let earlier = known[key] { return earlier.union(read) }
        known[key] = read
        return read
      }
    }
    return (names ?? []).sorted().map { DownloadPaths(directory: key, name: $0).target }
  }

  /// This process wrote the state file at `statePath`.
  static func saved(_ statePath: String) {
    let paths = DownloadPaths(target: statePath)
    directories.withLock { known in
      // Directories not read yet are read in full when first asked for.
      guard known[paths.directory] != nil else { return }
      known[paths.directory]?.insert(paths.name)
    }
  }

  /// This process removed the state file at `statePath` (or found it gone).
  static func removed(_ statePath: String) {
    let paths = DownloadPaths(target: statePath)
    _ = directories.withLock { $0[paths.directory]?.remove(paths.name) }
  }
}
