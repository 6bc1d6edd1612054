import Foundation
import HaulTestSupport
import Testing

@testable import Haul
@testable import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A small tmpfs for one test (root only), unmounted when released.
final class SmallDisk: Sendable {
  let directory: TemporaryDirectory
  var url: URL { directory.url }

  init(size: String) throws {
    directory = try TemporaryDirectory()
    try Self.mount(["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory.url.path])
  }

  func grow(to size: String) throws { try remount("size=\(size)") }

  func remount(_ options: String) throws { try Self.mount(["-o", "remount," + options, directory.url.path]) }

  deinit {
    _ = try? Subprocess.capture("/bin/umount", ["-l", directory.url.path])
  }

  private static func mount(_ arguments: [String]) throws {
    guard
      try Subprocess.capture("/bin/mount", arguments).termination == Termination(status: 0, signaled: false)
    else { throw CocoaError(.fileWriteUnknown) }
  }

  /// Whether this process may mount one: root, or under CI (where it must work).
  static let available: Bool = {
    guard getuid() == 0 else { return ProcessInfo.processInfo.environment["CI"]?.isEmpty == false }
    return (try? SmallDisk(size: "64k")) != nil
  }()
}

@Suite("manager: disk full", .timeLimit(.minutes(2)))
struct ManagerDiskFullTests {
  static func requests(_ range: Range<Int>, into directory: URL) -> [DownloadRequest] {
    range.map { DownloadRequest(url: "http://127.0.0.1:9/files/\($0).bin", to: .directory(directory)) }
  }

  @Test(.enabled(if: SmallDisk.available, "mounting a tmpfs needs root; skipped"))
  func aFullDiskLosesNothingAlreadyCommitted() async throws {
    let disk = try SmallDisk(size: "1m")
    let catalog = disk.url.appendingPathComponent("catalog.sqlite")
    var configuration = DownloadManager.Configuration()
    configuration.launch = .hold
    var committed: [DownloadID] = []
    var failure: HaulError?
    do {
      let manager = try DownloadManager(catalog: catalog, configuration: configuration)
      // Leave a little room, then add until the disk is full.
      let filler = disk.url.appendingPathComponent("filler")
      #expect(FileManager.default.createFile(atPath: filler.path, contents: Data(count: 700 << 10)))
      for batch in 0..<1000 {
        do {
          committed += try await manager.add(Self.requests(batch * 50..<(batch + 1) * 50, into: disk.url))
        } catch {
          failure = error
          break
        }
      }
      let error = try #require(failure, "the disk never filled")
      #expect(error.category == .fileSystem && error.message.contains("full"), "\(error)")
      #expect(error.message.contains(catalog.path))
      #expect(committed.count >= 50, "some batches fitted")
      #expect(manager.downloads().map(\.id) == committed, "the failed batch left nothing behind")
      await manager.close()
    }
    print("disk full after \(committed.count) downloads: \(String(describing: failure))")
    do {
      // Still full: what was committed is there.
      let manager = try DownloadManager(catalog: catalog, configuration: configuration)
      #expect(manager.downloads().map(\.id) == committed)
      await manager.close()
    }
    try disk.grow(to: "8m")
    let manager = try DownloadManager(catalog: catalog, configuration: configuration)
    #expect(manager.downloads().map(\.id) == committed)
    let more = try await manager.add(Self.requests(100_000..<100_050, into: disk.url))
    try await manager.pause(committed)
    #expect(manager.downloads().map(\.id) == committed + more)
    await manager.close()
  }
}
