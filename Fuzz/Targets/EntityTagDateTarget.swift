// ETag and HTTP-date parsing: never trap; parsed values round-trip through their formatters;
// and formatting any Unix time either refuses or produces a date that parses back to it.

import HaulCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntityTagAndDate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  let text = fuzzString(bytes)

  if let tag = EntityTag(headerValue: text) {
    let again = EntityTag(headerValue: tag.headerValue)
    require(again == tag, "ETag round trip of \(text.debugDescription)")
    require(EntityTag(opaque: tag.opaque, isWeak: tag.isWeak) == tag, "ETag rebuilt from parts")
    require(tag.weakMatch(tag), "weak self-match")
    require(tag.strongMatch(tag) == !tag.isWeak, "strong self-match")
    if let again { require(again.hashValue == tag.hashValue, "equal tags hash alike") }
  }

  if let time = HTTPDate.parse(text) {
    if let formatted = HTTPDate.format(time) {
      require(HTTPDate.parse(formatted) == time, "date round trip \(text.debugDescription) -> \(formatted)")
    }
  }

  let time = fuzzInt64(bytes, at: 0)
  if let formatted = HTTPDate.format(time) {
    require(HTTPDate.parse(formatted) == time, "format(\(time)) = \(formatted) does not parse back")
  }
  return 0
}
