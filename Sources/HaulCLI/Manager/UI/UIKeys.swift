/// A key of `haul ui`, decoded from the bytes a terminal sends in raw mode.
enum UIKey: Equatable, Sendable {
  case up, down, pageUp, pageDown, home, end
  case enter, escape, backspace, delete, tab
  /// Ctrl-C (the terminal's signal keys are off in raw mode).
  case interrupt
  /// Ctrl-Z.
  case suspend
  /// A printable character.
  case character(Character)
  /// Anything else (an unknown escape sequence, another control key): ignored.
  case other
}

/// Turns the bytes of reads from a raw-mode terminal into keys. Pure; escape sequences split
/// across reads are kept until the rest arrives, and a lone ESC at the end of a read is the
/// Esc key (terminals send a sequence in one write).
///
///     var decoder = UIKeyDecoder()
///     decoder.feed(Array("j\u{1B}[A".utf8))  // [.character("j"), .up]
struct UIKeyDecoder {
  private var pending: [UInt8] = []

  mutating func feed(_ bytes: [UInt8]) -> [UIKey] {
    pending += bytes
    var keys: [UIKey] = []
    var index = 0
    while index < pending.count {
      let byte = pending[index]
      if byte == 0x1B {
        guard let (key, length) = Self.escape(pending[index...]) else {
          // An incomplete sequence: wait for the rest, unless it is a lone ESC.
          if index + 1 == pending.count {
            keys.append(.escape)
            index += 1
          }
          break
        }
        keys.append(key)
        index += length
        continue
      }
      if byte < 0x80 {
        keys.append(Self.ascii(byte))
        index += 1
        continue
      }
      // UTF-8: a whole character, or wait for the rest of it.
      let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
      guard index + length <= pending.count else { break }
      let text = String(decoding: pending[index..<index + length], as: UTF8.self)
      keys.append(text.count == 1 && text != "\u{FFFD}" ? .character(text.first ?? " ") : .other)
      index += length
    }
    pending.removeFirst(index)
    return keys
  }

  private static func ascii(_ byte: UInt8) -> UIKey {
    switch byte {
    case 0x03: .interrupt
    case 0x1A: .suspend
    case 0x09: .tab
    case 0x0D, 0x0A: .enter
    case 0x08, 0x7F: .backspace
    case 0x20..<0x7F: .character(Character(Unicode.Scalar(byte)))
    default: .other
    }
  }

  /// The key an escape sequence at the start of `bytes` stands for and its length; nil when it
  /// is not complete yet.
  private static func escape(_ bytes: ArraySlice<UInt8>) -> (UIKey, Int)? {
    let start = bytes.startIndex
    guard bytes.count >= 2 else { return nil }
    let second = bytes[start + 1]
    // ESC ESC: Esc, then the second starts anew.
    if second == 0x1B { return (.escape, 1) }
    guard second == UInt8(ascii: "[") || second == UInt8(ascii: "O") else { return (.escape, 1) }
    // CSI: parameters and intermediates, then one final byte in 0x40...0x7E.
    var end = start + 2
    while end < bytes.endIndex, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
    guard end < bytes.endIndex else { return bytes.count > 16 ? (.other, bytes.count) : nil }
    let parameters = String(decoding: bytes[(start + 2)..<end], as: UTF8.self)
    let length = end - start + 1
    switch (bytes[end], parameters) {
    case (UInt8(ascii: "A"), _): return (.up, length)
    case (UInt8(ascii: "B"), _): return (.down, length)
    case (UInt8(ascii: "H"), _): return (.home, length)
    case (UInt8(ascii: "F"), _): return (.end, length)
    case (UInt8(ascii: "~"), "3"): return (.delete, length)
    case (UInt8(ascii: "~"), "5"): return (.pageUp, length)
    case (UInt8(ascii: "~"), "6"): return (.pageDown, length)
    case (UInt8(ascii: "~"), "1"), (UInt8(ascii: "~"), "7"): return (.home, length)
    case (UInt8(ascii: "~"), "4"), (UInt8(ascii: "~"), "8"): return (.end, length)
    default: return (.other, length)
    }
  }
}
