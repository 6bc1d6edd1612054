// The sidecar state file: truncated, corrupted or foreign input must throw a `LoadError`, never
// trap; a state that decodes must be consistent and survive encode → decode unchanged.
//
// The first byte picks a mode, because a random file almost never carries a matching checksum:
//   0: the rest is the whole file;
//   1: the rest is the JSON line, framed with a correct header and checksum (reaches the JSON decoder);
//   2: as 1 with the version number taken from the next byte;
//   3: a real file for a state built from the input, then truncated and one byte flipped.

@testable import Haul

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStateJournal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  guard let mode = bytes.first else { return 0 }
  let rest = Array(bytes.dropFirst())
  let file: [UInt8]
  switch mode % 4 {
  case 0:
    file = rest
  case 1:
    file = framed(json: rest, version: "1")
  case 2:
    file = framed(json: Array(rest.dropFirst()), version: String(Int8(bitPattern: rest.first ?? 0)))
  default:
    var state = ResumeState(url: "http://127.0.0.1/" + fuzzString(rest.prefix(16)))
    state.totalBytes = rest.count > 20 ? fuzzInt64(rest, at: 16) : nil
    state.etag = rest.count > 24 ? "\"" + fuzzString(rest.dropFirst(24).prefix(8)) + "\"" : nil
    state.setContiguous(max(0, min(state.totalBytes ?? 0, Int64(rest.count))))
    var encoded = StateJournal.encode(state)
    if let decoded = try? StateJournal.decode(encoded) {
      require(decoded == state || !StateJournal.isConsistent(state), "a written state does not read back")
    }
    let cut = Int(rest.last ?? 0) % (encoded.count + 1)
    encoded.removeSubrange(cut...)
    if rest.count > 1, !encoded.isEmpty { encoded[Int(rest[0]) % encoded.count] ^= rest[1] | 1 }
    file = encoded
  }
  decodeAndCheck(file)
  return 0
}

private func decodeAndCheck(_ file: [UInt8]) {
  let state: ResumeState
  do {
    state = try StateJournal.decode(file)
  } catch {
    switch error {
    case .corrupt(let reason): require(!reason.isEmpty, "corrupt without a reason")
    case .unsupportedVersion(let found): require(found != StateJournal.version, "own version refused")
    }
    return
  }
  require(StateJournal.isConsistent(state), "inconsistent state accepted: \(state)")
  require(state.heldBytes >= 0 && state.contiguousBytes >= 0, "negative byte counts \(state)")
  if let total = state.totalBytes { require(state.heldBytes <= total, "holds more than the total \(state)") }
  let again: ResumeState
  do {
    again = try StateJournal.decode(StateJournal.encode(state))
  } catch {
    require(false, "re-encoded state does not decode: \(error) for \(state)")
    return
  }
  require(again == state, "round trip changed \(state) into \(again)")
}

private func framed(json: [UInt8], version: String) -> [UInt8] {
  var hex = ""
  if let digest = try? MessageDigest(.sha256) {
    digest.update(json)
    hex = MessageDigest.hex(digest.finish())
  }
  return Array("haul-state \(version)\n".utf8) + json + Array("\nsha256 \(hex)\n".utf8)
}
