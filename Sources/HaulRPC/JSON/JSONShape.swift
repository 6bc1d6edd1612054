/// The structure of a JSON text without its contents: which kind each value is, and the
/// members of every array and object. `JSONValue.parse` reads it first so that
/// FoundationEssentials' `JSONDecoder` can be asked for each value's exact type: asking it for
/// the wrong type and trying the next costs it a thrown error of some 30 µs, which made a 2 MB
/// array of numbers take over a minute to decode.
///
/// This scan checks only structure (brackets, commas, colons, where strings end, which literal
/// starts where); the decoder still validates everything and converts strings and numbers.
/// Where the two ever read a text differently, decoding fails: it never yields a wrong value.
indirect enum JSONShape: Sendable, Equatable {
  case null, bool, integer, double, string
  /// A whole number beyond Int64, with its text: read as a double it would lose digits.
  case bigInteger(String)
  case array([JSONShape])
  /// Members in document order, keys already unescaped (the decoder looks them up by those).
  case object([Member])

  struct Member: Sendable, Equatable {
    var key: String
    var shape: JSONShape
  }

  enum Failure: Error, Equatable {
    case tooDeep
    case tooManyValues
    case malformed
  }

  /// Scans a whole text: one value, whitespace around it, nothing else.
  static func scan(_ bytes: [UInt8], maximumDepth: Int, maximumValues: Int) throws(Failure) -> JSONShape {
    var scanner = Scanner(bytes: bytes, maximumDepth: maximumDepth, maximumValues: maximumValues)
    let shape = try scanner.value(depth: 0)
    scanner.skipWhitespace()
    guard scanner.index == bytes.count else { throw .malformed }
    return shape
  }

  private struct Scanner {
    let bytes: [UInt8]
    let maximumDepth: Int
    let maximumValues: Int
    var index = 0
    var values = 0

    init(bytes: [UInt8], maximumDepth: Int, maximumValues: Int) {
      self.bytes = bytes
      self.maximumDepth = maximumDepth
      self.maximumValues = maximumValues
    }

    mutating func skipWhitespace() {
      while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func value(depth: Int) throws(Failure) -> JSONShape {
      values += 1
      guard values <= maximumValues else { throw .tooManyValues }
      skipWhitespace()
      switch peek() {
      case UInt8(ascii: "{"):
        guard depth < maximumDepth else { throw .tooDeep }
        return try object(depth: depth + 1)
      case UInt8(ascii: "["):
        guard depth < maximumDepth else { throw .tooDeep }
        return try array(depth: depth + 1)
      case UInt8(ascii: "\""):
        try skipString()
        return .string
      case UInt8(ascii: "t"): try literal("true"); return .bool
      case UInt8(ascii: "f"): try literal("false"); return .bool
      case UInt8(ascii: "n"): try literal("null"); return .null
      case .some(let byte)
      where byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte):
        return number()
      default: throw .malformed
      }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONShape {
      index += 1
      var elements: [JSONShape] = []
      while true {
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
          index += 1
          return .array(elements)
        }
        elements.append(try value(depth: depth))
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: ","): index += 1
        case UInt8(ascii: "]"): continue
        default: throw .malformed
        }
      }
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONShape {
      index += 1
      var members: [Member] = []
      var keys = Set<String>()
      while true {
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
          index += 1
          return .object(members)
        }
        guard peek() == UInt8(ascii: "\"") else { throw .malformed }
        let key = try keyString()
        // JSON-RPC never repeats a member; the decoder would keep just one of them.
        guard keys.insert(key).inserted else { throw .malformed }
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw .malformed }
        index += 1
        members.append(Member(key: key, shape: try value(depth: depth)))
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: ","): index += 1
        case UInt8(ascii: "}"): continue
        default: throw .malformed
        }
      }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
      let count = word.utf8CodeUnitCount
      guard index + count <= bytes.count else { throw .malformed }
      for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw .malformed }
      index += count
    }

    /// Integers that surely fit in Int64 are `integer`, larger ones `bigInteger` (with their
    /// text); anything with a fraction or an exponent is `double`.
    private mutating func number() -> JSONShape {
      let start = index
      var integral = true
      scan: while let byte = peek() {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): break
        case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"): integral = false
        default: break scan
        }
        index += 1
      }
      let text = bytes[start..<index]
      guard integral else { return .double }
      return Self.fitsInt64(text) ? .integer : .bigInteger(String(decoding: text, as: UTF8.self))
    }

    /// Digits of equal count compare like numbers (JSON has no leading zeros).
    private static func fitsInt64(_ text: ArraySlice<UInt8>) -> Bool {
      let negative = text.first == UInt8(ascii: "-")
      let digits = negative ? text.dropFirst() : text
      if digits.count != 19 { return digits.count < 19 }
      let limit = Array((negative ? "9223372036854775808" : "9223372036854775807").utf8)
      return !limit.lexicographicallyPrecedes(digits)
    }

    private mutating func skipString() throws(Failure) {
      index += 1
      while let byte = peek() {
        index += 1
        if byte == UInt8(ascii: "\"") { return }
        if byte == UInt8(ascii: "\\") { index += 1 }
      }
      throw .malformed
    }

    /// A member name, unescaped as the decoder will: \" \\ \/ \b \f \n \r \t and \uXXXX with
    /// surrogate pairs.
    private mutating func keyString() throws(Failure) -> String {
      index += 1
      var out: [UInt8] = []
      while let byte = peek() {
        index += 1
        switch byte {
        case UInt8(ascii: "\""):
          guard let key = String(validating: out, as: UTF8.self) else { throw .malformed }
          return key
        case UInt8(ascii: "\\"):
          guard let escape = peek() else { throw .malformed }
          index += 1
          switch escape {
          case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
          case UInt8(ascii: "b"): out.append(0x08)
          case UInt8(ascii: "f"): out.append(0x0C)
          case UInt8(ascii: "n"): out.append(0x0A)
          case UInt8(ascii: "r"): out.append(0x0D)
          case UInt8(ascii: "t"): out.append(0x09)
          case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
              guard peek() == UInt8(ascii: "\\"), index + 1 < bytes.count,
                bytes[index + 1] == UInt8(ascii: "u")
              else { throw .malformed }
              index += 2
              let low = try hex4()
              guard (0xDC00..<0xE000).contains(low) else { throw .malformed }
              scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw .malformed }
            UTF8.encode(unicode) { out.append($0) }
          default: throw .malformed
          }
        case 0x00..<0x20: throw .malformed
        default: out.append(byte)
        }
      }
      throw .malformed
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
      guard index + 4 <= bytes.count else { throw .malformed }
      var value: UInt32 = 0
      for _ in 0..<4 {
        let byte = bytes[index]
        index += 1
        let digit: UInt32
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
        default: throw .malformed
        }
        value = value << 4 | digit
      }
      return value
    }
  }
}
