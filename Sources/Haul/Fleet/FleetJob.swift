import FoundationEssentials

/// A download to put on a fleet queue.
///
/// ```swift
/// let request = try FleetJobRequest(url: "https://example.com/a.iso", directory: "isos")
/// let ids = try await queue.add([request])
/// ```
public struct FleetJobRequest: Sendable {
  /// The URL, checked and normalised as `Download` does.
  public let url: String
  /// Where the file goes, relative to each worker's base directory (`haul worker -d BASE`);
  /// "" is the base itself. Never absolute and never above the base: a queue cannot make a
  /// worker write outside the directory it was given.
  public let directory: String
  /// The file's name, or nil for the server's (Content-Disposition, else the URL's last segment).
  public let fileName: String?
  /// Higher runs first; equal priorities run in the order added.
  public let priority: Int
  /// The options that travel with the job: connections (nil means 1, and never more than the
  /// origin's free connections), rate limit, checksum, headers, retries, timeouts, overwrite,
  /// SHA-256, TLS checks, User-Agent. Headers are stored in the queue as given: protect the
  /// database like the credentials they may carry.
  public let options: DownloadOptions

  /// - Throws: `HaulError` (`.invalidInput`) for a bad URL, directory, name or options.
  public init(
    url: String, directory: String = "", fileName: String? = nil, priority: Int = 0,
    options: DownloadOptions = DownloadOptions()
  ) throws(HaulError) {
    self.url = try RequestURL.normalize(url)
    self.directory = try Self.checkedDirectory(directory)
    if let fileName {
      guard FileNameSanitizer.sanitize(fileName, keepingLeadingDots: true) == fileName, !fileName.isEmpty
      else {
        throw HaulError(
          .invalidInput, "'\(fileName)' cannot be a file name in the queue (no '/', '..' or controls)")
      }
    }
    self.fileName = fileName
    guard (-1_000_000...1_000_000).contains(priority) else {
      throw HaulError(.invalidInput, "priorities go from -1000000 to 1000000 (asked for \(priority))")
    }
    self.priority = priority
    if let connections = options.connections, !(1...64).contains(connections) {
      throw HaulError(.invalidInput, "connections must be between 1 and 64 (asked for \(connections))")
    }
    self.options = options
  }

  /// A relative path of ordinary names: no leading '/', no '.', '..', NUL or control characters.
  static func checkedDirectory(_ text: String) throws(HaulError) -> String {
    let parts = text.split(separator: "/", omittingEmptySubsequences: true)
    guard !text.hasPrefix("/"), !parts.contains(where: { $0 == "." || $0 == ".." }),
      !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    else {
      throw HaulError(
        .invalidInput, "'\(text)' cannot be a directory in the queue",
        hint: "give a directory relative to the workers' base directory (haul worker -d BASE), without '..'")
    }
    return parts.joined(separator: "/")
  }

  /// `scheme://host[:port]`, lower-case, without userinfo or a default port: what politeness counts by.
  static func origin(of url: String) -> String {
    guard let schemeEnd = url.firstRange(of: "://") else { return url }
    let scheme = url[..<schemeEnd.lowerBound].lowercased()
    let rest = url[schemeEnd.upperBound...]
    var authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)]
    if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
    let host = authority.lowercased()
    let defaultPort = scheme == "https" ? ":443" : ":80"
    return scheme + "://" + (host.hasSuffix(defaultPort) ? String(host.dropLast(defaultPort.count)) : host)
  }
}

/// A job on a fleet queue as the database has it now.
public struct FleetJob: Sendable, Equatable {
  public enum State: String, Sendable, CaseIterable {
    /// Waiting for a worker.
    case queued
    /// Waiting until `retryAt` (a transient failure, or its file was busy elsewhere), then queued.
    case delayed
    /// Held by `worker` under a lease.
    case active
    case paused
    case complete
    case failed
    case removed
  }

  /// 16 hex digits, stable for the job's life.
  public let id: String
  /// The URL without any password.
  public let url: String
  public let directory: String
  public let fileName: String?
  public let state: State
  public let priority: Int
  /// Set while a worker holds the job and has not yet acted on `pause` or `remove` from elsewhere.
  public let pendingRequest: String?
  /// The worker holding the job: set only while the job is `active` (a queued, delayed, paused,
  /// complete, failed or removed job is held by no worker).
  public let worker: String?
  /// Seconds until the holder's lease expires (negative: expired, not yet taken over).
  public let leaseRemaining: Double?
  /// Connections the holder was granted.
  public let connections: Int
  public let bytes: Int64
  public let totalBytes: Int64?
  /// The holder's last reported speed, while that report is less than `speedLifetime` seconds
  /// old: a worker that was killed, or whose transfer stalled, reports nothing new, and its
  /// last speed would be shown until its lease ran out.
  public let bytesPerSecond: Double?
  /// How long a reported speed stands (a worker reports every `progressInterval`, 0.5 s by
  /// default, while its bytes move).
  public static let speedLifetime = 5.0
  /// The file, relative to the workers' base directory, once a worker named it.
  public let file: String?
  public let finalURL: String?
  public let sha256: String?
  public let error: HaulError?
  /// Claims so far, and how many of them ended with the holder's lease expiring.
  public let attempts: Int
  public let lostLeases: Int
  /// Seconds until a delayed job is queued again.
  public let retryIn: Double?
  /// The worker that completed the job or recorded its failure (only for `complete` and `failed`;
  /// nil for a job the queue gave up on after its workers lost their leases).
  public let finishedBy: String?

  public var fraction: Double? {
    guard let totalBytes, totalBytes > 0 else { return totalBytes == 0 ? 1 : nil }
    return Double(bytes) / Double(totalBytes)
  }
}

/// A HaulError as the queue stores it: the category's number, the message, the hint.
extension HaulError.Category {
  static let all: [HaulError.Category] = [
    .generic, .invalidInput, .fileSystem, .network, .tls, .authentication, .protocol, .server, .integrity,
    .interrupted,
  ]

  init(exitCode: Int32) {
    self = Self.all.first { $0.exitCode == exitCode } ?? .generic
  }
}

/// The DownloadOptions that travel with a job, as the jsonb column stores them.
struct FleetJobOptions: Codable, Equatable {
  var rateLimit: Int64?
  var checksum: String?
  var headers: [[String]]?
  var overwrite: Bool?
  var computeSHA256: Bool?
  var verifyTLS: Bool?
  var maxAttemptsWithoutProgress: Int?
  var stallTimeout: Double?
  var retryBaseDelay: Double?
  var maxRetryDelay: Double?
  var userAgent: String?

  init(_ options: DownloadOptions) {
    let defaults = DownloadOptions()
    rateLimit = options.rateLimit
    checksum = options.checksum?.description
    headers = options.headers.isEmpty ? nil : options.headers.map { [$0.name, $0.value] }
    overwrite = options.overwrite ? true : nil
    computeSHA256 = options.computeSHA256 == defaults.computeSHA256 ? nil : options.computeSHA256
    verifyTLS = options.verifyTLS ? nil : false
    maxAttemptsWithoutProgress =
      options.maxAttemptsWithoutProgress == defaults.maxAttemptsWithoutProgress
      ? nil : options.maxAttemptsWithoutProgress
    stallTimeout = options.stallTimeout == defaults.stallTimeout ? nil : options.stallTimeout
    retryBaseDelay = options.retryBaseDelay == defaults.retryBaseDelay ? nil : options.retryBaseDelay
    maxRetryDelay = options.maxRetryDelay == defaults.maxRetryDelay ? nil : options.maxRetryDelay
    userAgent = options.userAgent == defaults.userAgent ? nil : options.userAgent
  }

  /// The options a worker downloads with (what the database says is untrusted: bad values are
  /// refused by `Download` itself, and a checksum that does not parse fails the job).
  func downloadOptions(connections: Int) throws(HaulError) -> DownloadOptions {
    var options = DownloadOptions()
    options.connections = connections
    options.rateLimit = rateLimit
    if let checksum { options.checksum = try Checksum(parsing: checksum) }
    options.headers = (headers ?? []).compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
    options.overwrite = overwrite ?? false
    options.computeSHA256 = computeSHA256 ?? options.computeSHA256
    options.verifyTLS = verifyTLS ?? true
    options.maxAttemptsWithoutProgress = maxAttemptsWithoutProgress ?? options.maxAttemptsWithoutProgress
    options.stallTimeout = stallTimeout ?? options.stallTimeout
    options.retryBaseDelay = retryBaseDelay ?? options.retryBaseDelay
    options.maxRetryDelay = maxRetryDelay ?? options.maxRetryDelay
    options.userAgent = userAgent ?? options.userAgent
    return options
  }

  var json: String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }

  static func decode(_ json: String) throws(HaulError) -> FleetJobOptions {
    do {
      return try JSONDecoder().decode(FleetJobOptions.self, from: Data(json.utf8))
    } catch {
      throw HaulError(.generic, "the job's options in the queue are unreadable: \(error)")
    }
  }
}
