import Foundation

/// A fresh directory under the system's temporary directory, removed when released.
public final class TemporaryDirectory: Sendable {
  public let url: URL

  public init() throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "haul-test-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  /// A path inside the directory (not created).
  public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

  deinit { try? FileManager.default.removeItem(at: url) }
}
