/// The guarantees `FileNameSanitizer` documents, checked independently of its code.
func checkSafeFileName(_ name: String, from input: String) {
  let context = "\(name.debugDescription) from \(input.debugDescription)"
  require(!name.isEmpty, "empty name \(context)")
  // Haul creates NAME.part, NAME.haul and NAME.haul.tmp: all must fit in 255 bytes.
  require(name.utf8.count + ".haul.tmp".utf8.count <= 255, "too long for NAME.haul.tmp \(context)")
  require(!name.utf8.contains(where: { $0 == 0x2F || $0 == 0x5C || $0 == 0 }), "separator or NUL \(context)")
  require(name != "." && name != "..", "dot name \(context)")
  require(!name.utf8.allSatisfy { $0 == 0x2E }, "only dots \(context)")
  require(name.utf8.last != 0x2E, "trailing dot \(context)")
  for scalar in name.unicodeScalars {
    require(scalar.properties.generalCategory != .control, "control character \(context)")
    require(!scalar.properties.isBidiControl, "bidi control \(context)")
    require(
      ![0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF].contains(scalar.value), "zero-width character \(context)")
  }
  if let first = name.unicodeScalars.first {
    require(!first.properties.isWhitespace, "leading space \(context)")
  }
  if let last = name.unicodeScalars.last {
    require(!last.properties.isWhitespace, "trailing space \(context)")
  }
  let tail = String(
    decoding: name.utf8.suffix(5).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
  require(tail != ".part" && tail != ".haul", "Haul's own suffix \(context)")
}
