import Dispatch
import Foundation
import HaulCore
import Testing

@testable import Haul

/// One directory sync serves every caller that came before it began; a caller that came while
/// one ran waits for the next.
@Suite struct DirectorySyncsTests {
  /// A sync that records its begin and end, and holds the first one until `release`.
  private final class Recorder: Sendable {
    let log = Locked<[String]>([])
    private let count = Locked(0)
    private let gate = DispatchSemaphore(value: 0)

    func sync(_ directory: String) {
      let number = count.withLock {
        $0 += 1
        return $0
      }
      log.withLock { $0.append("begin \(number) \(directory)") }
      if number == 1 { gate.wait() }
      log.withLock { $0.append("end \(number) \(directory)") }
    }

    func release() { gate.signal() }

    func waitFor(_ entry: String) -> Bool {
      for _ in 0..<3000 {
        if log.withLock({ $0.contains(entry) }) { return true }
        usleep(1_000)
      }
      return false
    }

    func index(of entry: String) -> Int? { log.withLock { $0.firstIndex(of: entry) } }
  }

  /// On a thread of its own: the global queues have only as many threads as CPUs, and the
  /// callers here block.
  private static func call(
    _ syncs: DirectorySyncs, _ directory: String, as name: String, _ recorder: Recorder,
    _ group: DispatchGroup
  ) {
    group.enter()
    Thread.detachNewThread {
      syncs.syncDirectory(directory)
      recorder.log.withLock { $0.append("return \(name)") }
      group.leave()
    }
  }

  @Test func callersThatCameWhileASyncRanShareTheNextOne() throws {
    let recorder = Recorder()
    let syncs = DirectorySyncs(sync: recorder.sync)
    let group = DispatchGroup()
    Self.call(syncs, "/d", as: "A", recorder, group)
    #expect(recorder.waitFor("begin 1 /d"))
    for name in ["B", "C", "D"] { Self.call(syncs, "/d", as: name, recorder, group) }
    for _ in 0..<3000 where syncs.waiting(in: "/d") < 3 { usleep(1_000) }
    #expect(syncs.waiting(in: "/d") == 3)
    recorder.release()
    #expect(group.wait(timeout: .now() + 30) == .success)
    let log = recorder.log.withLock { $0 }
    #expect(log.filter { $0.hasPrefix("begin") } == ["begin 1 /d", "begin 2 /d"], "\(log)")
    let secondEnded = try #require(recorder.index(of: "end 2 /d"))
    for name in ["B", "C", "D"] {
      // Sync 1 may have begun before their renames: only the second covers them.
      #expect(try #require(recorder.index(of: "return \(name)")) > secondEnded, "\(log)")
    }
    #expect(try #require(recorder.index(of: "return A")) > #require(recorder.index(of: "end 1 /d")))
    #expect(syncs.waiting(in: "/d") == 0)
  }

  @Test func callersOneAfterAnotherEachGetTheirOwn() {
    let recorder = Recorder()
    recorder.release()  // the first sync does not wait
    let syncs = DirectorySyncs(sync: recorder.sync)
    for _ in 0..<3 { syncs.syncDirectory("/d") }
    #expect(recorder.log.withLock { $0.filter { $0.hasPrefix("begin") }.count } == 3)
  }

  @Test func anotherDirectoryDoesNotWait() {
    let recorder = Recorder()
    let syncs = DirectorySyncs(sync: recorder.sync)
    let group = DispatchGroup()
    Self.call(syncs, "/a", as: "A", recorder, group)
    #expect(recorder.waitFor("begin 1 /a"))
    syncs.syncDirectory("/b")  // would hang if it waited for /a's
    #expect(recorder.log.withLock { $0.contains("end 2 /b") })
    recorder.release()
    #expect(group.wait(timeout: .now() + 30) == .success)
  }
}
