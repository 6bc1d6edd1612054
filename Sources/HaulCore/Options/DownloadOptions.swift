import Dispatch
import FoundationEssentials

/// Where a download's file goes.
public enum DownloadDestination: Sendable, Equatable {
  /// Exactly this file.
  case file(URL)
  /// This directory, with the name the server suggests (Content-Disposition) or the URL's last path segment.
  case directory(URL)

  /// Standard output as it is (a pipe, a terminal, a file the shell opened): the body is
  /// written in order as it arrives, on one connection, with no `.part` and no resume.
  ///
  ///     try await Download(url: url, to: .standardOutput).run()
  public static let standardOutput = DownloadDestination.file(URL(fileURLWithPath: standardOutputPath))

  /// The path that names standard output, for the library and the command alike.
  package static let standardOutputPath = "/dev/stdout"
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
  /// more while throughput keeps rising, up to `automaticConnectionCap`; connections added in a
  /// step that did not raise it are closed again, and more are tried again 10 s later (then
  /// 20 s, 40 s, … up to about 5 minutes), since a link can change. Under a rate limit (its own
  /// or a shared one), connections that could only share it are not added; when a shared limit
  /// is raised or lifted, more are tried within half a second. Servers that ignore ranges
  /// always get one.
  public var connections: Int?
  /// The most connections automatic mode opens to one file.
  public static let automaticConnectionCap = 16
  /// Cap on received bytes per second, or nil for no cap.
  public var rateLimit: Int64?
  /// A cap shared with other downloads and changeable while they run (a manager's overall
  /// limit); applies on top of `rateLimit`.
  public var sharedRateLimit: BandwidthLimit?
  /// Attempts in a row that make no progress before giving up. Progress means holding more
  /// bytes than ever before in this run (a restart from byte 0 does not count, and restarts
  /// are capped apart). 1 means one attempt, no retries (0 is taken as 1; a negative count is
  /// refused), `Int.max` no limit. The command's `--retries N` is N + 1 attempts.
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
  /// For a `.directory` destination: the file name to use instead of the URL's own last path
  /// segment, when the server gives none (no `Content-Disposition`, no redirect to a URL of
  /// another name). A name the server gives still wins. The command's `--auto-rename` uses it
  /// for two URLs of one name, so each still gets the name its server gives.
  ///
  ///     options.fallbackFileName = "download.1"  // for https://example.com/download?id=2
  public var fallbackFileName: String?
  /// Replace a file at the destination that Haul did not create, or a finished file that changed on the server.
  public var overwrite: Bool = false
  /// Continue a partial file Haul did not make (like `wget -c`): a `.part` file without its
  /// state, or a file at the target left by curl or wget. It resumes from the file's size,
  /// after the server repeated up to 64 KiB of its end and they matched; otherwise the download
  /// fails and the file is left as it was.
  public var continuePartial: Bool = false
  /// Give the finished file the server's modification time (Last-Modified, FTP's MDTM) instead
  /// of the time it was downloaded, as `curl -R` and wget do: a later `-N` then compares the
  /// server's copy with the server's own time.
  public var remoteTime: Bool = false
  /// Whether `cancel()` keeps the partial bytes and state for a later resume.
  public var keepPartialOnCancel: Bool = true
  /// Verify TLS certificates and host names (turn off only for testing).
  public var verifyTLS: Bool = true
  /// Which certificates to trust, and the client certificate to present.
  public var tls = TLSOptions()
  /// Credentials, cookies, proxy, name resolution, redirects and the largest file accepted.
  public var network = NetworkOptions()
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
  public var userAgent: String = "haul/\(HaulLibrary.version)"
  /// Asked for a fresh URL when the link expires mid-download (a 401, 403 or 410 once bytes
  /// are held, as signed CDN and S3 links do): given the URL that stopped working, it returns
  /// a new URL of the same file, or nil to fail as without it. The new URL continues only once
  /// its first answer proves the same file (the same size and strong ETag or Last-Modified,
  /// else the 64 KiB overlap check); otherwise the partial is left as it was. At most
  /// `refreshLimit` fresh URLs per `run()`. It runs on the task of `run()`, never on a thread
  /// of the transfers; an error it throws fails the download with its description.
  ///
  /// ```swift
  /// options.refreshURL = { expired in
  ///   try await api.signedURL(for: "big.iso")   // nil if the file is gone
  /// }
  /// ```
  public var refreshURL: (@Sendable (_ expiredURL: String) async throws -> String?)?
  /// The most fresh URLs `refreshURL` is asked for in one `run()`.
  public static let refreshLimit = ExpiredLink.maxRefreshes

  public init() {}
}

/// Haul's library facts. (Not named `Haul`: a type named like the module would hide it, and
/// `Haul.Download` would not resolve.)
public enum HaulLibrary {
  /// The version of this library and of the `haul` command.
  public static let version = "0.1.0"
}
