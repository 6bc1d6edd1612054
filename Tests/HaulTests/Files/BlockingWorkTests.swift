import Dispatch
import Foundation
import Testing

@testable import Haul

/// Work that waits on the disk runs on threads of its own: many downloads' syncs wait at once,
/// not in turns on as many threads as there are CPUs (what `DispatchQueue.global()` gave).
@Suite struct BlockingWorkTests {
  @Test func manyWaitingCallsRunAtOnce() {
    let count = 4 * max(2, ProcessInfo.processInfo.activeProcessorCount)
    let started = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<count {
      BlockingWork.run(in: done) {
        started.signal()
        gate.wait()
      }
    }
    // Every call must be waiting at the gate while none has passed it. The bound is generous for
    // starting a few threads; on the CPU-wide pool the rest started one per second or so.
    let deadline = DispatchTime.now() + 3
    var waiting = 0
    while waiting < count, started.wait(timeout: deadline) == .success { waiting += 1 }
    for _ in 0..<count { gate.signal() }
    done.wait()
    #expect(waiting == count, "only \(waiting) of \(count) calls ran at once")
  }
}
