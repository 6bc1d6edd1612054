// Server digests (RFC 9530 `sha-256=:BASE64:`, RFC 3230 `SHA-256=BASE64`): never trap; every
// digest found is lower-case hex of its algorithm's length; the strongest is one of them.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServerDigests(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let text = fuzzString(fuzzBytes(data, size))
  for found in [ServerDigests.parseStructured(text), ServerDigests.parseLegacy(text)] {
    for (algorithm, hex) in found {
      require(hex.utf8.count == algorithm.hexLength, "\(algorithm) digest of \(hex.utf8.count) hex digits")
      require(
        hex.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) },
        "not lower-case hex: \(hex.debugDescription)")
    }
    if let (algorithm, hex) = ServerDigests.strongest(found) {
      require(found[algorithm] == hex, "strongest is not among those found")
    } else {
      require(found.isEmpty, "digests found but none is the strongest")
    }
  }
  return 0
}
