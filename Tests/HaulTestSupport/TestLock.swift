import Foundation

/// A value behind an `NSLock` (a pthread mutex), which ThreadSanitizer understands; the test
/// server's shared state uses it for the same reason Haul's engine does.
public final class TestLock<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  public init(_ value: Value) { self.value = value }

  public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
