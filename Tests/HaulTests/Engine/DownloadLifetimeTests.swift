import FoundationEssentials
import HaulTestSupport
import Testing

@testable import Haul

/// A `Download` an app drops, and options it refuses up front.
@Suite struct DownloadLifetimeTests {
  /// A screen that subscribed to `events` and went away before the download ran: the loop over
  /// them ends once the `Download` is released, instead of waiting forever.
  @Test(.timeLimit(.minutes(1))) func eventsEndWhenTheDownloadIsReleasedWithoutRunning() async throws {
    let directory = try TemporaryDirectory()
    var events: AsyncStream<DownloadEvent>?
    do {
      let download = try Download(url: "http://127.0.0.1:9/f", to: .file(directory.file("f")))
      events = download.events
    }
    let stream = try #require(events)
    var count = 0
    for await _ in stream { count += 1 }
    #expect(count == 0)
  }

  @Test func aNegativeAttemptCountIsRefused() throws {
    let directory = try TemporaryDirectory()
    var options = DownloadOptions()
    options.maxAttemptsWithoutProgress = -1
    #expect(throws: HaulError.self) {
      _ = try Download(url: "http://127.0.0.1:9/f", to: .file(directory.file("f")), options: options)
    }
    options.maxAttemptsWithoutProgress = 0
    _ = try Download(url: "http://127.0.0.1:9/f", to: .file(directory.file("f")), options: options)
  }
}
