// Content-Range: never traps; every parsed value is self-consistent and round-trips.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentRange(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let text = fuzzString(fuzzBytes(data, size))
  guard let range = ContentRange(headerValue: text) else { return 0 }
  switch range {
  case .range(let first, let last, let total):
    require(
      first >= 0 && first <= last && last < Int64.max, "bad bounds \(range) from \(text.debugDescription)")
    if let total { require(last < total, "last beyond total \(range)") }
    require(range.length == last - first + 1, "length \(String(describing: range.length)) for \(range)")
    require(range.total == total, "total accessor")
    let canonical = "bytes \(first)-\(last)/\(total.map(String.init) ?? "*")"
    require(ContentRange(headerValue: canonical) == range, "round trip of \(canonical)")
  case .unsatisfied(let total):
    require(total >= 0, "negative total \(range)")
    require(range.length == nil, "unsatisfied has a length")
    require(ContentRange(headerValue: "bytes */\(total)") == range, "round trip of \(range)")
  }
  return 0
}
