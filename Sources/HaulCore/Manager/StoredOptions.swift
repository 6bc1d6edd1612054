import FoundationEssentials

/// `DownloadOptions` as a catalog keeps them (JSON): every field that can be written down,
/// without secrets. Secret header values are nil here and live in memory only (`Secrets`).
/// `sharedRateLimit` is not stored: the manager sets its own overall limit on every run.
/// `refreshURL` is not stored: a closure lives only in the process that set it.
package struct StoredOptions: Codable, Hashable, Sendable {
  package struct Header: Codable, Hashable, Sendable {
    package var name: String
    /// nil: a secret, kept in memory only.
    package var value: String?
  }

  package var connections: Int?
  package var rateLimit: Int64?
  package var maxAttemptsWithoutProgress: Int
  package var stallTimeout: Double
  package var headers: [Header]
  package var checksum: String?
  package var computeSHA256: Bool
  package var overwrite: Bool
  package var continuePartial: Bool = false
  package var remoteTime: Bool = false
  /// Checked again when the download is made (`Download` refuses one that is not a plain name).
  package var fallbackFileName: String?
  package var keepPartialOnCancel: Bool
  package var verifyTLS: Bool
  package var retryBaseDelay: Double
  package var maxRetryDelay: Double
  package var checkpointInterval: Double
  package var progressInterval: Double
  package var userAgent: String
  /// Paths only: no secret.
  package var tls: TLSOptions
  /// Its password and cookies stay in memory only: `NetworkOptions` never encodes them.
  package var network: NetworkOptions

  /// Headers whose values are credentials: never written to a catalog.
  package static let secretHeaderNames: Set<String> = ["authorization", "proxy-authorization", "cookie"]

  /// The storable part of `options` and the secret header values it left out, by header index.
  package static func split(_ options: DownloadOptions) -> (StoredOptions, secretHeaders: [Int: String]) {
    var secrets: [Int: String] = [:]
    let headers = options.headers.enumerated().map { index, header in
      guard secretHeaderNames.contains(header.name.lowercased()) else {
        return Header(name: header.name, value: header.value)
      }
      secrets[index] = header.value
      return Header(name: header.name, value: nil)
    }
    var stored = StoredOptions(
      connections: options.connections, rateLimit: options.rateLimit,
      maxAttemptsWithoutProgress: options.maxAttemptsWithoutProgress, stallTimeout: options.stallTimeout,
      headers: headers, checksum: options.checksum?.description, computeSHA256: options.computeSHA256,
      overwrite: options.overwrite, keepPartialOnCancel: options.keepPartialOnCancel,
      verifyTLS: options.verifyTLS, retryBaseDelay: options.retryBaseDelay,
      maxRetryDelay: options.maxRetryDelay,
      checkpointInterval: options.checkpointInterval, progressInterval: options.progressInterval,
      userAgent: options.userAgent, continuePartial: options.continuePartial, tls: options.tls,
      network: options.network)
    stored.remoteTime = options.remoteTime
    stored.fallbackFileName = options.fallbackFileName
    return (stored, secrets)
  }

  /// Indices of headers whose values are secrets.
  package var secretHeaderIndices: [Int] { headers.indices.filter { headers[$0].value == nil } }

  /// The options back, with the secret header values from memory. A secret that memory does
  /// not have is left out (`DownloadManager` never runs such a download).
  package func options(secretHeaders: [Int: String]) -> DownloadOptions {
    var options = DownloadOptions()
    options.connections = connections
    options.rateLimit = rateLimit
    options.maxAttemptsWithoutProgress = maxAttemptsWithoutProgress
    options.stallTimeout = stallTimeout
    options.headers = headers.enumerated().compactMap { index, header in
      (header.value ?? secretHeaders[index]).map { (name: header.name, value: $0) }
    }
    // Stored from a valid Checksum's description, so it parses; a tampered one is dropped.
    options.checksum = checksum.flatMap { try? Checksum(parsing: $0) }
    options.computeSHA256 = computeSHA256
    options.overwrite = overwrite
    options.continuePartial = continuePartial
    options.remoteTime = remoteTime
    options.fallbackFileName = fallbackFileName
    options.keepPartialOnCancel = keepPartialOnCancel
    options.verifyTLS = verifyTLS
    options.retryBaseDelay = retryBaseDelay
    options.maxRetryDelay = maxRetryDelay
    options.checkpointInterval = checkpointInterval
    options.progressInterval = progressInterval
    options.userAgent = userAgent
    options.tls = tls
    options.network = network
    return options
  }

  /// Missing fields take the defaults, so catalogs written before a field existed still load.
  package init(from decoder: any Decoder) throws {
    let defaults = StoredOptions.split(DownloadOptions()).0
    let container = try decoder.container(keyedBy: CodingKeys.self)
    func value<T: Decodable>(_ key: CodingKeys, _ fallback: T) throws -> T {
      try container.decodeIfPresent(T.self, forKey: key) ?? fallback
    }
    connections = try container.decodeIfPresent(Int.self, forKey: .connections)
    rateLimit = try container.decodeIfPresent(Int64.self, forKey: .rateLimit)
    maxAttemptsWithoutProgress = try value(.maxAttemptsWithoutProgress, defaults.maxAttemptsWithoutProgress)
    stallTimeout = try value(.stallTimeout, defaults.stallTimeout)
    headers = try value(.headers, defaults.headers)
    checksum = try container.decodeIfPresent(String.self, forKey: .checksum)
    computeSHA256 = try value(.computeSHA256, defaults.computeSHA256)
    overwrite = try value(.overwrite, defaults.overwrite)
    continuePartial = try value(.continuePartial, defaults.continuePartial)
    remoteTime = try value(.remoteTime, defaults.remoteTime)
    fallbackFileName = try container.decodeIfPresent(String.self, forKey: .fallbackFileName)
    keepPartialOnCancel = try value(.keepPartialOnCancel, defaults.keepPartialOnCancel)
    verifyTLS = try value(.verifyTLS, defaults.verifyTLS)
    retryBaseDelay = try value(.retryBaseDelay, defaults.retryBaseDelay)
    maxRetryDelay = try value(.maxRetryDelay, defaults.maxRetryDelay)
    checkpointInterval = try value(.checkpointInterval, defaults.checkpointInterval)
    progressInterval = try value(.progressInterval, defaults.progressInterval)
    userAgent = try value(.userAgent, defaults.userAgent)
    tls = try value(.tls, defaults.tls)
    network = try value(.network, defaults.network)
  }

  private init(
    connections: Int?, rateLimit: Int64?, maxAttemptsWithoutProgress: Int, stallTimeout: Double,
    headers: [Header], checksum: String?, computeSHA256: Bool, overwrite: Bool, keepPartialOnCancel: Bool,
    verifyTLS: Bool, retryBaseDelay: Double, maxRetryDelay: Double, checkpointInterval: Double,
    progressInterval: Double, userAgent: String, continuePartial: Bool, tls: TLSOptions,
    network: NetworkOptions
  ) {
    self.connections = connections
    self.rateLimit = rateLimit
    self.maxAttemptsWithoutProgress = maxAttemptsWithoutProgress
    self.stallTimeout = stallTimeout
    self.headers = headers
    self.checksum = checksum
    self.computeSHA256 = computeSHA256
    self.overwrite = overwrite
    self.keepPartialOnCancel = keepPartialOnCancel
    self.verifyTLS = verifyTLS
    self.retryBaseDelay = retryBaseDelay
    self.maxRetryDelay = maxRetryDelay
    self.checkpointInterval = checkpointInterval
    self.progressInterval = progressInterval
    self.userAgent = userAgent
    self.continuePartial = continuePartial
    self.tls = tls
    self.network = network
  }

  /// The fields of `DownloadOptions` this type stores or deliberately leaves out; a test
  /// compares it with `DownloadOptions`'s own, so a new option cannot be lost silently.
  package static let coveredOptionFields: Set<String> = [
    "connections", "rateLimit", "sharedRateLimit", "maxAttemptsWithoutProgress", "stallTimeout", "headers",
    "checksum", "computeSHA256", "overwrite", "keepPartialOnCancel", "verifyTLS", "retryBaseDelay",
    "maxRetryDelay", "checkpointInterval", "progressInterval", "userAgent", "continuePartial", "remoteTime",
    "fallbackFileName", "tls", "network", "refreshURL",
  ]
}
