import Foundation

// The library's event payloads have no public initializers; @testable reaches their memberwise ones.
@testable import Haul

enum Fixtures {
  static func start(
    file: String = "/tmp/dl/ubuntu.iso", url: String = "https://example.com/ubuntu.iso",
    resumedFrom: Int64 = 0,
    total: Int64? = 1 << 30
  ) -> DownloadStart {
    DownloadStart(
      file: URL(fileURLWithPath: file), finalURL: url, resumedFrom: resumedFrom, totalBytes: total)
  }

  static func result(
    file: String = "/tmp/dl/ubuntu.iso", total: Int64 = 1 << 30, received: Int64 = 1 << 30,
    resumedFrom: Int64 = 0,
    alreadyComplete: Bool = false, remoteChanged: Bool = false, duration: TimeInterval = 12.3
  ) -> DownloadResult {
    DownloadResult(
      file: URL(fileURLWithPath: file), totalBytes: total, bytesReceived: received, resumedFrom: resumedFrom,
      finalURL: "https://example.com/ubuntu.iso", wasAlreadyComplete: alreadyComplete,
      remoteChanged: remoteChanged,
      duration: duration)
  }

  static func retry(attempt: Int = 3, max: Int = 10, delay: TimeInterval = 2, reason: HaulError)
    -> RetryNotice
  {
    RetryNotice(attempt: attempt, maxAttempts: max, delay: delay, reason: reason)
  }

  static func progress(_ bytes: Int64, of total: Int64?, speed: Double = 0, connections: Int = 1)
    -> DownloadProgress
  {
    DownloadProgress(bytes: bytes, totalBytes: total, bytesPerSecond: speed, connections: connections)
  }
}

extension Fixtures {
  static func saved(file: String = "/tmp/dl/ubuntu.iso", bytes: Int64, total: Int64?) -> SavedProgress {
    SavedProgress(file: URL(fileURLWithPath: file), url: "u", bytes: bytes, totalBytes: total)
  }
}
