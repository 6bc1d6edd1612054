import Dispatch
import FoundationEssentials

/// Something that happened to a download, in order. Observe them with `Download.events`.
public enum DownloadEvent: Sendable, Equatable {
  /// A response was accepted and bytes are about to flow.
  case started(DownloadStart)
  /// Bytes arrived (emitted at most every `DownloadOptions.progressInterval`).
  case progress(DownloadProgress)
  /// The server's copy differs from the partial bytes (or ignores ranges); starting over from byte 0.
  case restarted(reason: String)
  /// An attempt failed with a transient error; the next one starts after `delay`.
  case retrying(RetryNotice)
  /// `pause()` took effect; everything received so far is durable.
  case paused(DownloadProgress)
  /// `resume()` took effect after a pause.
  case resumed
  /// The file is complete at `DownloadResult.file`.
  case completed(DownloadResult)
  /// The download stopped for good.
  case failed(HaulError)
}

/// What a download starts from.
public struct DownloadStart: Sendable, Equatable {
  /// The file that will hold the result.
  public let file: URL
  /// The URL after redirects.
  public let finalURL: String
  /// Bytes already held from earlier sessions (0 on a fresh start).
  public let resumedFrom: Int64
  /// The full size, when the server said.
  public let totalBytes: Int64?

  public init(file: URL, finalURL: String, resumedFrom: Int64, totalBytes: Int64?) {
    self.file = file
    self.finalURL = finalURL
    self.resumedFrom = resumedFrom
    self.totalBytes = totalBytes
  }
}

/// A snapshot of a download's progress.
public struct DownloadProgress: Sendable, Equatable {
  /// Bytes held (durable or about to be), counting earlier sessions. It can go down: a
  /// connection that fails (or a range whose digest does not match) gives back the bytes it
  /// received but had not yet written, and they are fetched again.
  public let bytes: Int64
  /// The full size, when known.
  public let totalBytes: Int64?
  /// Recent receive speed, bytes per second.
  public let bytesPerSecond: Double
  /// Open connections.
  public let connections: Int

  /// 0...1 when the size is known.
  public var fraction: Double? {
    guard let totalBytes, totalBytes > 0 else { return totalBytes == 0 ? 1 : nil }
    return Double(bytes) / Double(totalBytes)
  }

  /// Seconds left at the current speed, when it can be told.
  public var secondsRemaining: Double? {
    guard let totalBytes, bytesPerSecond > 0 else { return nil }
    return Double(max(0, totalBytes - bytes)) / bytesPerSecond
  }

  public init(bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, connections: Int) {
    self.bytes = bytes
    self.totalBytes = totalBytes
    self.bytesPerSecond = bytesPerSecond
    self.connections = connections
  }
}

/// A transient failure and the wait before the next attempt.
public struct RetryNotice: Sendable, Equatable {
  /// Attempts made in a row without progress, counting this one.
  public let attempt: Int
  /// The limit on such attempts.
  public let maxAttempts: Int
  /// Seconds until the next attempt.
  public let delay: TimeInterval
  /// Why the attempt failed.
  public let reason: HaulError

  public init(attempt: Int, maxAttempts: Int, delay: TimeInterval, reason: HaulError) {
    self.attempt = attempt
    self.maxAttempts = maxAttempts
    self.delay = delay
    self.reason = reason
  }
}

/// A finished download.
public struct DownloadResult: Sendable, Equatable {
  /// Where the complete file is.
  public let file: URL
  /// Its size in bytes.
  public let totalBytes: Int64
  /// Bytes received over the network in this session.
  public let bytesReceived: Int64
  /// Bytes that were already on disk when this session began.
  public let resumedFrom: Int64
  /// The URL after redirects.
  public let finalURL: String
  /// True when the file was already complete and nothing was fetched.
  public let wasAlreadyComplete: Bool
  /// True when the file was already complete but the server now has a different version,
  /// which was left alone (set `DownloadOptions.overwrite` to fetch it).
  public let remoteChanged: Bool
  /// Wall time of this session, seconds.
  public let duration: TimeInterval
  /// SHA-256 of the whole file (lower-case hex), verified against any expected checksum and
  /// server digest; nil when the file was already complete and nothing was read, or when
  /// `DownloadOptions.computeSHA256` was off and nothing else needed it.
  public let sha256: String?
  /// When the file was already complete: why the server's copy could not be compared with it
  /// (it could not be reached, or answered with an error status), nil when it was. The file
  /// is kept as it is; a later run compares again.
  public let serverNotChecked: String?

  public init(
    file: URL, totalBytes: Int64, bytesReceived: Int64, resumedFrom: Int64, finalURL: String,
    wasAlreadyComplete: Bool, remoteChanged: Bool, duration: TimeInterval, sha256: String? = nil,
    serverNotChecked: String? = nil
  ) {
    self.sha256 = sha256
    self.serverNotChecked = serverNotChecked
    self.file = file
    self.totalBytes = totalBytes
    self.bytesReceived = bytesReceived
    self.resumedFrom = resumedFrom
    self.finalURL = finalURL
    self.wasAlreadyComplete = wasAlreadyComplete
    self.remoteChanged = remoteChanged
    self.duration = duration
  }
}
