// The finished file's seal (`user.haul.seal`, an extended attribute anyone who can write the
// file can set): any bytes decode to nothing or to a seal that encodes back to exactly those
// bytes, within the size limit, with a well-formed SHA-256.
//
// The first byte picks a mode: 0, the rest is the attribute; 1, a seal built from the input is
// encoded, then truncated and one byte flipped (reaches the parser's later lines).
// fuzz-source: Sources/Haul/Files/FinishedFileSeal.swift

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFinishedFileSeal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  guard let mode = bytes.first else { return 0 }
  let rest = Array(bytes.dropFirst())
  var attribute = rest
  if mode % 2 == 1 {
    let hex = Array("0123456789abcdef".utf8)
    let seal = FinishedFileSeal(
      size: max(0, fuzzInt64(rest, at: 0)), modified: max(0, fuzzInt64(rest, at: 8)),
      changedBy: max(0, fuzzInt64(rest, at: 16)),
      sha256: rest.count > 24
        ? String(decoding: (0..<64).map { hex[Int(rest[($0 % (rest.count - 24)) + 24]) % 16] }, as: UTF8.self)
        : nil)
    let encoded = seal.encode()
    require(FinishedFileSeal.decode(encoded) == seal, "a written seal does not read back: \(seal)")
    attribute = encoded
    let cut = Int(rest.last ?? 0) % (attribute.count + 1)
    attribute.removeSubrange(cut...)
    if rest.count > 1, !attribute.isEmpty { attribute[Int(rest[0]) % attribute.count] ^= rest[1] | 1 }
  }
  guard let seal = FinishedFileSeal.decode(attribute) else { return 0 }
  require(attribute.count <= FinishedFileSeal.maximumSize, "an oversized seal accepted")
  require(seal.encode() == attribute, "a seal that does not encode back to its bytes: \(seal)")
  if let sha256 = seal.sha256 {
    require(
      sha256.utf8.count == 64 && sha256.utf8.allSatisfy { "0123456789abcdef".utf8.contains($0) }, "bad hex")
  }
  return 0
}
