// Content-Disposition (RFC 6266 + RFC 8187) followed by the sanitizer, as the engine uses it:
// never traps, and whatever name comes out is safe to create inside the target directory.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentDisposition(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  let text = fuzzString(bytes)
  if let name = ContentDisposition.filename(fromHeaderValue: text) {
    require(!name.isEmpty, "empty name from \(text.debugDescription)")
    if let safe = FileNameSanitizer.sanitize(name) { checkSafeFileName(safe, from: name) }
  }
  // The RFC 8187 decoder on raw bytes (percent-decoding can produce any byte).
  if let decoded = ContentDisposition.decodeExtendedValue(bytes),
    let safe = FileNameSanitizer.sanitize(decoded)
  {
    checkSafeFileName(safe, from: decoded)
  }
  return 0
}
