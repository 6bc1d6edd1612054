import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

/// A manager on a fresh catalog in a temporary directory, with a test server.
final class ManagerFixture: Sendable {
  let directory: TemporaryDirectory
  let server: TestServer
  var catalog: URL { directory.file("catalog.sqlite") }
  var downloads: URL { directory.file("downloads") }

  init() throws {
    directory = try TemporaryDirectory()
    server = try TestServer()
    try FileManager.default.createDirectory(
      at: directory.file("downloads"), withIntermediateDirectories: false)
  }

  deinit { server.stop() }

  /// Serves `size` seeded random bytes at `path`, throttled when asked; returns the bytes.
  /// `stallAfter`: the first `stallTimes` responses send that many bytes, then nothing, so a
  /// test can act on a download in the middle however slow the machine is.
  @discardableResult
  func serve(
    _ path: String, size: Int, seed: UInt64, bytesPerSecond: Int? = nil, stallAfter: Int? = nil,
    stallTimes: Int = 1
  ) -> [UInt8] {
    let body = TestResource.random(size: size, seed: seed)
    let faults = TestFaults(
      stallAfterBytes: stallAfter, stallTimes: stallTimes, bytesPerSecond: bytesPerSecond)
    server.setResource(path, TestResource(body: body, etag: "\"\(seed)\"", faults: faults))
    return body
  }

  func open(
    limit: Int = 4, launch: LaunchPolicy = .resume, rate: Int64? = nil
  ) throws -> DownloadManager {
    var configuration = DownloadManager.Configuration()
    configuration.maxConcurrentDownloads = limit
    configuration.launch = launch
    configuration.overallRateLimit = rate
    configuration.progressRecordInterval = 0.1
    return try DownloadManager(catalog: catalog, configuration: configuration)
  }

  func file(_ name: String) -> URL { downloads.appendingPathComponent(name) }

  func contents(_ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: file(name).path).map { Array($0) }
  }

  func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: file(name).path) }

  /// The bytes of the catalog and its log, as on disk now.
  func catalogBytes() -> [UInt8] {
    ["", "-wal"].flatMap { FileManager.default.contents(atPath: catalog.path + $0).map(Array.init) ?? [] }
  }
}

/// Every event of a manager since it was created, for tests to wait on.
final class EventLog: Sendable {
  private let events = TestLock<[DownloadManagerEvent]>([])
  private let task: Task<Void, Never>

  init(_ manager: DownloadManager) {
    let stream = manager.events()
    let events = self.events
    task = Task { for await event in stream { events.withLock { $0.append(event) } } }
  }

  deinit { task.cancel() }

  var all: [DownloadManagerEvent] { events.withLock { $0 } }

  /// Names of the events of `id`, in order (progress left out).
  func names(_ id: DownloadID) -> [String] {
    all.filter { $0.id == id }.map(Self.name).filter { $0 != "progress" }
  }

  static func name(_ event: DownloadManagerEvent) -> String {
    switch event {
    case .added: "added"
    case .queued: "queued"
    case .started: "started"
    case .responded: "responded"
    case .progress: "progress"
    case .retrying: "retrying"
    case .restarted: "restarted"
    case .paused: "paused"
    case .completed: "completed"
    case .failed: "failed"
    case .removed: "removed"
    case .forgotten: "forgotten"
    case .changed: "changed"
    }
  }

  /// Waits until an event matches (at most `seconds`, a bound against hangs, not a timing
  /// check); false if none did.
  @discardableResult
  func wait(seconds: Double = 60, for match: (DownloadManagerEvent) -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
      if all.contains(where: match) { return true }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return false
  }

  func wait(_ name: String, _ id: DownloadID, seconds: Double = 60) async -> Bool {
    await wait(seconds: seconds) { $0.id == id && Self.name($0) == name }
  }
}

/// Waits until `condition` holds (at most `seconds`); false if it never did.
func eventually(seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return condition()
}

/// Waits for the manager to be idle, at most `seconds`; false if it was not by then.
func idle(_ manager: DownloadManager, seconds: Double = 60) async -> Bool {
  let done = TestLock(false)
  Task {
    await manager.waitUntilIdle()
    done.withLock { $0 = true }
  }
  return await eventually(seconds: seconds) { done.withLock { $0 } }
}
