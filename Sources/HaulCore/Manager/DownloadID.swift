/// A download's stable id in a manager's catalog: 16 lower-case hex digits, like aria2's GID.
///
/// ```swift
/// let id = try await manager.add("https://example.com/a.iso", to: .directory(downloads))
/// print(id)                                   // e.g. 2089b05ecca3d829
/// let same = DownloadID("2089b05ecca3d829")   // parses what a user or an RPC client typed
/// ```
public struct DownloadID: Hashable, Sendable, Comparable, Codable, LosslessStringConvertible {
  /// The id as a number (never 0).
  public let rawValue: UInt64

  /// nil for 0, which no download has (aria2 reserves it too).
  public init?(rawValue: UInt64) {
    guard rawValue != 0 else { return nil }
    self.rawValue = rawValue
  }

  /// Parses exactly 16 hex digits (either case); nil for anything else.
  public init?(_ description: String) {
    let utf8 = description.utf8
    guard utf8.count == 16, utf8.allSatisfy(Self.isHexDigit), let value = UInt64(description, radix: 16)
    else { return nil }
    self.init(rawValue: value)
  }

  /// A new random id.
  package static func random<G: RandomNumberGenerator>(using generator: inout G) -> DownloadID {
    DownloadID(unchecked: UInt64.random(in: 1...UInt64.max, using: &generator))
  }

  private init(unchecked value: UInt64) { rawValue = value }

  /// Stands in until a record gets its id.
  package static let placeholder = DownloadID(unchecked: 1)

  /// 16 lower-case hex digits, zero-padded.
  public var description: String {
    let digits = String(rawValue, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  public static func < (lhs: DownloadID, rhs: DownloadID) -> Bool { lhs.rawValue < rhs.rawValue }

  public init(from decoder: any Decoder) throws {
    let text = try decoder.singleValueContainer().decode(String.self)
    guard let id = DownloadID(text) else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not a download id"))
    }
    self = id
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
  }
}

/// Where a download stands in a manager.
public enum DownloadState: String, Sendable, Codable, CaseIterable {
  /// Waiting for a free slot; starts in queue order.
  case queued
  /// Running now.
  case active
  /// Stopped by `pause`, or waiting for credentials after a relaunch (see `DownloadSnapshot.error`);
  /// starts again after `resume`.
  case paused
  /// The file is complete.
  case complete
  /// Stopped for good by an error (`DownloadSnapshot.error`); `resume` tries again.
  case failed
  /// Cancelled; listed until forgotten, `resume` starts it again.
  case removed

  /// Waiting to run: queued or paused (aria2's "waiting" list, which `move` reorders).
  public var isWaiting: Bool { self == .queued || self == .paused }

  /// Finished one way or another: complete, failed or removed (aria2's "stopped" list).
  public var isStopped: Bool { self == .complete || self == .failed || self == .removed }
}

/// A place in the waiting queue (queued and paused downloads, in the order they will start),
/// as aria2's `changePosition` takes it. Destinations outside the queue are clamped to its ends.
public enum QueuePosition: Sendable, Equatable {
  /// At this index from the front (0: first). aria2's `POS_SET`.
  case index(Int)
  /// This many places from where the download is now (negative: towards the front). aria2's `POS_CUR`.
  case offset(Int)
  /// This many places from the end (0: last, -1: one before last). aria2's `POS_END`.
  case fromEnd(Int)

  /// The front of the queue: starts next.
  public static let front = QueuePosition.index(0)
  /// The end of the queue: starts after every other waiting download.
  public static let end = QueuePosition.fromEnd(0)
}
