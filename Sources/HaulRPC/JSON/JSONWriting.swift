extension JSONValue {
  /// The value as compact JSON text (UTF-8): no spaces, members in their order, non-ASCII
  /// characters as they are, control characters escaped. Non-finite doubles become `null`.
  package var serialized: [UInt8] {
    var out: [UInt8] = []
    write(to: &out)
    return out
  }

  package var serializedString: String { String(decoding: serialized, as: UTF8.self) }

  package func write(to out: inout [UInt8]) {
    switch self {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
    case .integer(let value): out.append(contentsOf: String(value).utf8)
    case .double(let value):
      out.append(contentsOf: (value.isFinite ? String(value) : "null").utf8)
    case .number(let text): out.append(contentsOf: text.utf8)
    case .string(let value): Self.writeString(value, to: &out)
    case .array(let values):
      out.append(UInt8(ascii: "["))
      for (index, value) in values.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        value.write(to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let object):
      out.append(UInt8(ascii: "{"))
      for (index, member) in object.members.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        Self.writeString(member.key, to: &out)
        out.append(UInt8(ascii: ":"))
        member.value.write(to: &out)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  private static let hexDigits = Array("0123456789abcdef".utf8)

  /// Escapes what JSON requires, plus U+2028 and U+2029, which end a line in older JavaScript
  /// (a JSONP reply is a script). Works on the UTF-8 bytes (a String's are valid): every byte of
  /// a multi-byte character is copied as it is, except those two characters' (E2 80 A8/A9).
  private static func writeString(_ string: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    var string = string
    string.withUTF8 { bytes in
      out.reserveCapacity(out.count + bytes.count + 1)
      var index = 0
      while index < bytes.count {
        let byte = bytes[index]
        if byte >= 0x20, byte != 0x22, byte != 0x5C, byte != 0x7F, byte != 0xE2 {
          out.append(byte)
        } else if byte == 0x22 {
          out.append(contentsOf: #"\""#.utf8)
        } else if byte == 0x5C {
          out.append(contentsOf: #"\\"#.utf8)
        } else if byte == 0x0A {
          out.append(contentsOf: #"\n"#.utf8)
        } else if byte == 0x0D {
          out.append(contentsOf: #"\r"#.utf8)
        } else if byte == 0x09 {
          out.append(contentsOf: #"\t"#.utf8)
        } else if byte == 0xE2 {
          if index + 2 < bytes.count, bytes[index + 1] == 0x80,
            bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9
          {
            writeEscape(bytes[index + 2] == 0xA8 ? 0x2028 : 0x2029, to: &out)
            index += 2
          } else {
            out.append(byte)
          }
        } else {
          writeEscape(UInt32(byte), to: &out)
        }
        index += 1
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  /// `\uXXXX`.
  private static func writeEscape(_ value: UInt32, to out: inout [UInt8]) {
    out.append(contentsOf: #"\u"#.utf8)
    for shift: UInt32 in [12, 8, 4, 0] { out.append(hexDigits[Int((value >> shift) & 0xF)]) }
  }
}
