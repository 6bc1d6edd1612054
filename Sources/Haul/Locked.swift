import Foundation

/// A value behind a lock, for state shared between threads.
///
/// Why not `Synchronization.Mutex`: on Linux it hands a contended lock over in the kernel,
/// which ThreadSanitizer cannot see, so every contended use reads as a data race and the
/// sanitizer run in CI would be noise. `NSLock` is a pthread mutex, which it understands.
/// Rules as for any lock here: no I/O and no continuation resumes inside `withLock`.
final class Locked<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
