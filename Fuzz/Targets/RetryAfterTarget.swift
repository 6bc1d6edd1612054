// Retry-After: never traps, and the delay is never negative whatever the clock says.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRetryAfter(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  let text = fuzzString(bytes)
  guard let value = RetryAfter(headerValue: text) else { return 0 }
  if case .seconds(let seconds) = value {
    require(seconds >= 0, "negative seconds from \(text.debugDescription)")
  }
  for now in [Int64.min, -1, 0, 1_700_000_000, Int64.max, fuzzInt64(bytes, at: 0)] {
    require(value.delay(now: now) >= 0, "negative delay for \(value) at \(now)")
  }
  return 0
}
