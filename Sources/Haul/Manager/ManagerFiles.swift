import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What a manager reads and deletes of its downloads' own files: the engine's state files
/// (bytes held, at launch, without the network), finished files (still there?), and the
/// files `remove(…, deletingFiles: true)` deletes.
enum ManagerFiles {
  /// Records with bytes held and sizes from the downloads' state files: the truth about what
  /// an unfinished download holds (the catalog's numbers are for listing only).
  static func addSavedProgress(to records: inout [DownloadRecord]) {
    var reader = SavedProgressReader()
    for index in records.indices { reader.update(&records[index]) }
  }

  /// Why a complete download's file is not what was finished: gone, or changed in size.
  static func finishedFileProblem(_ record: DownloadRecord) -> HaulError? {
    guard record.state == .complete, let file = record.file else { return nil }
    return finishedFileProblem(file, totalBytes: record.totalBytes)
  }

  static func finishedFileProblem(_ file: String, totalBytes: Int64?) -> HaulError? {
    var info = stat()
    guard stat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      return HaulError(
        .fileSystem, "the finished file \(file) was deleted or moved", hint: "resume it to download it again")
    }
    if let total = totalBytes, Int64(info.st_size) != total {
      return HaulError(
        .fileSystem,
        "the finished file \(file) changed since (\(info.st_size) bytes, finished with \(total))",
        // Resuming alone fails: a run never replaces bytes Haul did not write.
        hint: "it was left as it is; move or delete it, then resume the download to fetch it again")
    }
    return nil
  }

  /// Deletes a download's `.part` and state files, and its finished file when asked and it is
  /// still the one Haul made. Missing files are fine; other failures leave the file.
  static func delete(_ files: DownloadFiles) {
    var target = files.file
    if target == nil, let directory = files.directory {
      target = SavedProgress.all(in: URL(fileURLWithPath: directory)).first { $0.url == files.url }?.file.path
    }
    guard let target else { return }
    let paths = DownloadPaths(target: target)
    for path in [paths.part, paths.state, paths.state + ".tmp"] { try? FileIO.remove(path) }
    if files.finished, isFinishedFile(target, size: files.size, url: files.url) {
      try? FileIO.remove(target)
    }
    FileIO.syncDirectory(paths.directory)
  }

  private static func isFinishedFile(_ path: String, size: Int64?, url: String) -> Bool {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
    if let size, Int64(info.st_size) != size { return false }
    if let record = FinishedFileRecord.read(at: path), record.url != url { return false }
    return true
  }
}

/// Reads what unfinished downloads hold from their state files, one record at a time. A
/// download into a directory whose file name the catalog did not learn (a kill right after the
/// first response) is found by its URL among the directory's state files, as the engine finds
/// it; each directory is scanned once.
struct SavedProgressReader {
  private var directories: [String: [String: SavedProgress]] = [:]

  /// Sets the record's bytes, size and file from its state file (0 bytes when it has none).
  /// `running`: another process runs it, whose recorded numbers (live, a few times a second)
  /// are fresher than what its state file holds durably.
  mutating func update(_ record: inout DownloadRecord, running: Bool = false) {
    guard !running else { return }
    guard record.state != .complete else { return }
    let saved: SavedProgress?
    if let file = record.file {
      saved = SavedProgress.load(for: URL(fileURLWithPath: file))
    } else if case .directory(let directory) = record.destination {
      if directories[directory.path] == nil {
        let all = SavedProgress.all(in: directory)
        directories[directory.path] = Dictionary(all.map { ($0.url, $0) }) { first, _ in first }
      }
      saved = directories[directory.path]?[record.url]
    } else {
      saved = nil
    }
    guard let saved else {
      record.bytes = 0
      return
    }
    record.bytes = saved.bytes
    record.totalBytes = saved.totalBytes ?? record.totalBytes
    record.file = saved.file.path
  }
}
