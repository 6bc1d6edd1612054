import FoundationEssentials

/// Rows of the fleet queue as the manager's records, and the manager's destinations as the queue
/// stores them: a directory relative to `baseDirectory` (as `haul worker -d BASE` reads it) and
/// a file name. Rows are untrusted input: a path that escapes the base, or a name that is not a
/// plain file name, is not used.
struct CatalogRows: Sendable {
  let baseDirectory: URL

  init(baseDirectory: URL) { self.baseDirectory = baseDirectory.standardizedFileURL }

  /// A row of `FleetSQL.records` as a record (nil for a row that is not usable).
  func record(_ row: PostgresRow) -> DownloadRecord? {
    guard let id = row.text(0).flatMap(DownloadID.init), let url = row.text(1),
      let directory = try? FleetJobRequest.checkedDirectory(row.text(2) ?? "")
    else { return nil }
    let folder = directory.isEmpty ? baseDirectory : baseDirectory.appendingPathComponent(directory)
    let destination: DownloadDestination =
      if let name = row.text(3), FileNameSanitizer.sanitize(name, keepingLeadingDots: true) == name {
        .file(folder.appendingPathComponent(name))
      } else {
        .directory(folder)
      }
    let (options, _) = split(row.text(4), connections: row.int(5))
    let state: DownloadState =
      switch row.text(6) {
      case "delayed": .queued
      case let text?: DownloadState(rawValue: text) ?? .failed
      case nil: .failed
      }
    var record = DownloadRecord(
      id: id, url: RequestURL.withoutPassword(url), destination: destination, options: options.stored,
      secrets: options.parts, state: state, position: row.int(7) ?? 0, addedAt: row.double(16) ?? 0)
    if url != record.url { record.secrets.insert(.urlPassword) }
    record.bytes = row.int(8) ?? 0
    record.totalBytes = row.int(9)
    if let file = row.text(10), let path = try? FleetJobRequest.checkedDirectory(file), !path.isEmpty {
      record.file = baseDirectory.appendingPathComponent(path).path
    }
    record.error = row.text(12).map {
      StoredError(category: Int32(row.int(11) ?? 1), message: $0, hint: row.text(13))
    }
    record.sha256 = row.text(14)
    record.finalURL = row.text(15)
    record.finishedAt = row.double(17)
    return record
  }

  /// A job's options as the manager stores them, and the secret header values (`FleetQueue`
  /// keeps them in the queue; the manager only in memory).
  func split(_ json: String?, connections: Int64?) -> (
    (stored: StoredOptions, parts: SecretParts), secretHeaders: [Int: String]
  ) {
    let fleet = (try? FleetJobOptions.decode(json ?? "{}")) ?? FleetJobOptions(DownloadOptions())
    let options = (try? fleet.downloadOptions(connections: Int(connections ?? 1))) ?? DownloadOptions()
    let (stored, secrets) = StoredOptions.split(options)
    return ((stored, secrets.isEmpty ? [] : .headers), secrets)
  }

  /// A destination as the queue stores it: a directory relative to the base, and a name.
  func place(_ destination: DownloadDestination) throws(HaulError) -> (String, String?) {
    switch destination {
    case .directory(let url):
      return (try relativeDirectory(url), nil)
    case .file(let url):
      return (try relativeDirectory(url.deletingLastPathComponent()), url.lastPathComponent)
    }
  }

  private func relativeDirectory(_ url: URL) throws(HaulError) -> String {
    let path = url.standardizedFileURL.path
    let base = baseDirectory.path
    if path == base { return "" }
    guard let inside = relative(path) else {
      throw HaulError(
        .invalidInput, "\(path) is outside \(base), the directory this manager shares with the fleet",
        hint: "on a shared queue every download goes under the base directory (as haul worker -d BASE)")
    }
    return try FleetJobRequest.checkedDirectory(inside)
  }

  /// `path` relative to the base, or nil when it is not inside it.
  func relative(_ path: String) -> String? {
    let prefix = baseDirectory.path.hasSuffix("/") ? baseDirectory.path : baseDirectory.path + "/"
    let standard = URL(fileURLWithPath: path).standardizedFileURL.path
    return standard.hasPrefix(prefix) ? String(standard.dropFirst(prefix.count)) : nil
  }
}
