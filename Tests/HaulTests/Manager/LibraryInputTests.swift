import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// What an app may pass the library: refused with a message, never a trap at run time.
@Suite("library input", .timeLimit(.minutes(2)))
struct LibraryInputTests {
  /// Options an app can set to nonsense (a slider at -1, a NaN from a division).
  static let badIntervals: [(String, @Sendable (inout DownloadOptions) -> Void)] = [
    ("progressInterval", { $0.progressInterval = -1 }),
    ("progressInterval", { $0.progressInterval = .nan }),
    ("checkpointInterval", { $0.checkpointInterval = .infinity }),
    ("checkpointInterval", { $0.checkpointInterval = 1e12 }),
    ("retryBaseDelay", { $0.retryBaseDelay = -0.5 }),
    ("maxRetryDelay", { $0.maxRetryDelay = .nan }),
  ]

  @Test func aDownloadWithAnUnusableIntervalIsRefusedWhenMade() throws {
    let directory = try TemporaryDirectory()
    for (name, spoil) in Self.badIntervals {
      var options = DownloadOptions()
      spoil(&options)
      // Before, `run()` trapped converting the interval to nanoseconds.
      let error = #expect(throws: HaulError.self) {
        try Download(url: "http://127.0.0.1:9/x", to: .directory(directory.url), options: options)
      }
      #expect(error?.category == .invalidInput && error?.message.contains(name) == true, "\(name)")
    }
    var zero = DownloadOptions()
    zero.progressInterval = 0
    zero.retryBaseDelay = 0
    _ = try Download(url: "http://127.0.0.1:9/x", to: .directory(directory.url), options: zero)
  }

  @Test func aManagerRefusesAnUnusableIntervalAndAddsNothing() async throws {
    let fixture = try ManagerFixture()
    let manager = try fixture.open()
    var options = DownloadOptions()
    options.progressInterval = -1
    let error = await #expect(throws: HaulError.self) {
      try await manager.add(fixture.server.url("/a"), to: .directory(fixture.downloads), options: options)
    }
    #expect(error?.category == .invalidInput)
    #expect(manager.downloads().isEmpty)
    await manager.close()

    var configuration = DownloadManager.Configuration()
    configuration.progressRecordInterval = .nan
    let refused = #expect(throws: HaulError.self) {
      try DownloadManager(catalog: fixture.catalog, configuration: configuration)
    }
    #expect(refused?.category == .invalidInput && refused?.message.contains("progressRecordInterval") == true)
  }
}
