// File names from servers and URLs: every name the sanitizer returns is safe to create.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFileName(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  // The first byte picks how the rest is read, so far-away scalars are reachable too.
  let rest = bytes.dropFirst()
  let text = (bytes.first ?? 0) & 1 == 0 ? fuzzString(rest) : fuzzScalars(Array(rest))
  if let safe = FileNameSanitizer.sanitize(text) {
    checkSafeFileName(safe, from: text)
    require(
      FileNameSanitizer.sanitize(safe) == safe, "sanitize is not idempotent on \(safe.debugDescription)")
  }
  if let safe = FileNameSanitizer.name(fromURLPath: text) { checkSafeFileName(safe, from: text) }
  if let safe = FileNameSanitizer.name(fromURL: "http://127.0.0.1/" + text) {
    checkSafeFileName(safe, from: text)
  }
  return 0
}
