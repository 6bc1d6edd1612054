import Foundation
import Haul

/// `FleetBench manager QUEUE BASE LEASE URL…`: the child process the fleet's crash test kills. A
/// `DownloadManager` on the queue adds the URLs into BASE (when the queue is empty), says
/// `added ID…`, then runs until idle and says `idle`.
func managerChild(_ arguments: [String]) async {
  guard arguments.count >= 3, let lease = Double(arguments[2]) else {
    fail("usage: manager QUEUE BASE LEASE URL…")
  }
  do throws(HaulError) {
    let base = URL(fileURLWithPath: arguments[1])
    let manager = try DownloadManager(
      queue: try PostgresAddress(arguments[0]), baseDirectory: base, leaseSeconds: lease)
    if manager.downloads().isEmpty, arguments.count > 3 {
      let ids = try await manager.add(arguments[3...].map { DownloadRequest(url: $0, to: .directory(base)) })
      FileHandle.standardOutput.write(
        Data(("added " + ids.map(\.description).joined(separator: " ") + "\n").utf8))
    }
    await manager.waitUntilIdle()
    await manager.close()
    FileHandle.standardOutput.write(Data("idle\n".utf8))
  } catch {
    fail("\(error)")
  }
}
