#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// POSIX calls that a signal can interrupt (`EINTR`) are retried here, in one place, instead of
/// in a loop beside every call (as swift-nio's `syscall(blocking:where:)` does).
///
///     let count = SystemCall.retryingEINTR { read(fd, buffer, size) }
///     let written = try SystemCall.retryingEINTR("pwrite") { pwrite(fd, base, size, offset) }
package enum SystemCall {
  /// Runs `call` until it returns anything but -1 with `errno == EINTR`, and returns that: the
  /// result, or -1 with `errno` set by the failure. Never use it for `close` (on Linux a
  /// descriptor is closed even when `close` reports EINTR; retrying could close another one).
  @inlinable
  package static func retryingEINTR<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
      let result = call()
      if result != -1 || errno != EINTR { return result }
    }
  }

  /// The same, throwing `SystemError(name, errno:)` instead of returning -1.
  @inlinable
  package static func retryingEINTR<Result: BinaryInteger>(
    _ name: String, _ call: () -> Result
  ) throws(SystemError) -> Result {
    let result = retryingEINTR(call)
    guard result != -1 else { throw SystemError(name, errno: errno) }
    return result
  }
}
