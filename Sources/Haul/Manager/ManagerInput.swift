import FoundationEssentials

/// What callers give a manager, checked and split into what the catalog stores and what
/// stays in memory. Runs on the caller's task, before the executor.
enum ManagerInput {
  struct Prepared: Sendable {
    var record: DownloadRecord
    var secrets: Secrets?
    var refreshURL: (@Sendable (String) async throws -> String?)?
  }

  /// Checks URLs, options and destinations (each directory once) and splits off the secrets.
  static func prepare(_ requests: [DownloadRequest], now: Double) throws(HaulError) -> [Prepared] {
    var directories: Set<String> = []
    var prepared: [Prepared] = []
    prepared.reserveCapacity(requests.count)
    for request in requests {
      let destination = standardized(request.destination)
      let directory =
        switch destination {
        case .file(let file): file.deletingLastPathComponent().path
        case .directory(let directory): directory.path
        }
      if directories.insert(directory).inserted, !FileIO.isDirectory(directory) {
        throw HaulError(.fileSystem, "the directory \(directory) does not exist", hint: "create it first")
      }
      let (url, urlSecrets) = try split(url: request.url)
      try validate(request.options, url: url)
      let (options, secretHeaders) = StoredOptions.split(request.options)
      var parts = SecretParts.of(request.options, secretHeaders: secretHeaders)
      if urlSecrets != nil { parts.insert(.urlPassword) }
      let record = DownloadRecord(
        id: .placeholder, url: url, destination: destination, options: options, secrets: parts, addedAt: now)
      prepared.append(
        Prepared(
          record: record, secrets: parts.isEmpty ? nil : Secrets(url: urlSecrets, headers: secretHeaders),
          refreshURL: request.options.refreshURL))
    }
    return prepared
  }

  /// The URL normalised as the engine sends it, without its password; and the full URL when it
  /// had one (memory only).
  static func split(url text: String) throws(HaulError) -> (stored: String, withPassword: String?) {
    let url = try RequestURL.normalize(text)
    let stored = RequestURL.withoutPassword(url)
    return (stored, stored == url ? nil : url)
  }

  /// The engine's own checks of options (it refuses what it cannot run).
  static func validate(_ options: DownloadOptions, url: String) throws(HaulError) {
    _ = try Download(url: url, to: .directory(URL(fileURLWithPath: "/")), options: options)
  }

  /// Absolute, with `.` and `..` resolved, so that two spellings of one file are one key.
  static func standardized(_ destination: DownloadDestination) -> DownloadDestination {
    switch destination {
    case .file(let file): .file(URL(fileURLWithPath: file.path).standardizedFileURL)
    case .directory(let directory): .directory(URL(fileURLWithPath: directory.path).standardizedFileURL)
    }
  }

  /// Whether `secrets` hold every secret `record` needs. The password and cookies of its
  /// network options are in the record itself while in memory (they are never encoded, so a
  /// record read back from a catalog has none).
  static func hasCredentials(_ record: DownloadRecord, _ secrets: Secrets?) -> Bool {
    if record.secrets.contains(.urlPassword), secrets?.url == nil { return false }
    if record.secrets.contains(.password), record.options.network.password == nil { return false }
    if record.secrets.contains(.cookies), record.options.network.cookies == nil { return false }
    if record.secrets.contains(.headers) {
      return record.options.secretHeaderIndices.allSatisfy { secrets?.headers[$0] != nil }
    }
    return true
  }
}
