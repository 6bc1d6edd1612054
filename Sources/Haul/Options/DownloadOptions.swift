import Dispatch
import FoundationEssentials

/// Where a download's file goes.
public enum DownloadDestination: Sendable, Equatable {
  /// Exactly this file.
  case file(URL)
  /// This directory, with the name the server suggests (Content-Disposition) or the URL's last path segment.
  case directory(URL)
}

/// How a download behaves. The defaults suit most uses.
///
/// ```swift
/// var options = DownloadOptions()
/// options.rateLimit = 2 << 20          // 2 MiB/s
/// options.headers = [("Authorization", "Bearer …")]
/// ```
public struct DownloadOptions: Sendable {
  /// Connections per file (1...64), or nil to choose automatically: start with one and add
  /// more while throughput keeps rising, up to `automaticConnectionCap`. Servers that ignore
  /// ranges always get one.
  public var connections: Int?
  /// The most connections automatic mode opens to one file.
  public static let automaticConnectionCap = 16
  /// Cap on received bytes per second, or nil for no cap.
  public var rateLimit: Int64?
  /// Attempts in a row that make no progress before giving up (an attempt that gets bytes resets the count).
  public var maxAttemptsWithoutProgress: Int = 10
  /// Seconds without a single byte (or to connect) before the attempt counts as failed.
  public var stallTimeout: TimeInterval = 30
  /// Extra request headers, sent in order.
  public var headers: [(name: String, value: String)] = []
  /// The digest the finished file must have; a mismatch fails with `.integrity` and discards the data.
  public var checksum: Checksum?
  /// Compute the file's SHA-256 for `DownloadResult.sha256` even when no checksum or server
  /// digest asks for it. It runs on a thread of its own while the bytes arrive (about 0.6
  /// CPU-seconds per GiB with SHA extensions); turn it off to save that. Checksums and server
  /// digests are verified either way.
  public var computeSHA256: Bool = true
  /// Replace a file at the destination that Haul did not create, or a finished file that changed on the server.
  public var overwrite: Bool = false
  /// Whether `cancel()` keeps the partial bytes and state for a later resume.
  public var keepPartialOnCancel: Bool = true
  /// Verify TLS certificates and host names (turn off only for testing).
  public var verifyTLS: Bool = true
  /// First retry delay; later ones double up to `maxRetryDelay`, with jitter.
  public var retryBaseDelay: TimeInterval = 1
  /// Longest wait between attempts, also the cap on a server's Retry-After.
  public var maxRetryDelay: TimeInterval = 60
  /// How often received bytes are made durable and recorded in the state file.
  /// A hard kill loses at most about this much progress.
  public var checkpointInterval: TimeInterval = 0.25
  /// How often `.progress` events are emitted.
  public var progressInterval: TimeInterval = 0.1
  /// The User-Agent header.
  public var userAgent: String = "haul/\(Haul.version)"

  public init() {}
}

/// Haul's library facts.
public enum Haul {
  /// The version of this library and of the `haul` command.
  public static let version = "0.1.0"
}
