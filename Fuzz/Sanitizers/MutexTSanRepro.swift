// Why `swift test --sanitize=thread` reports races on Linux in code that is correctly locked.
//
//   swiftc -sanitize=thread -Onone Fuzz/Sanitizers/MutexTSanRepro.swift -o /tmp/mutex-tsan && /tmp/mutex-tsan
//
// Every access below happens inside `Mutex.withLock`, yet ThreadSanitizer reports a
// "Swift access race" (Swift 6.3.1, Linux x86_64). On Linux, Synchronization's Mutex parks
// contended threads with PI futexes: the kernel hands the lock to the waiter, so no user-space
// release/acquire pair exists for TSan to see. The same false positive appears in the test run
// for every `Mutex` in Haul (CurlTransport.inbox, DownloadRun.shared, ...) and in TestServer.
// A pthread_mutex_t-based lock (which TSan intercepts) does not have the problem.
import Foundation
import Synchronization

final class Unprotected: @unchecked Sendable { var values: [Int] = [] }

let lock = Mutex(0)
let box = Unprotected()
let group = DispatchGroup()
for worker in 0..<4 {
  DispatchQueue.global().async(group: group) {
    for step in 0..<2_000 { lock.withLock { _ in box.values.append(worker * step) } }
  }
}
group.wait()
print(lock.withLock { _ in box.values.count })  // 8000: the lock works; the report is spurious.
