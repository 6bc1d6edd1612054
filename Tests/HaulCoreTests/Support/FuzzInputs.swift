import HaulTestSupport

/// Deterministic hostile and random inputs shared by the parser tests.
///
/// Seeded so a failure reproduces exactly; fragments are biased toward each grammar's
/// delimiters so random strings reach deep into the parsers instead of failing at byte one.
enum FuzzInputs {
  /// Inputs every parser must survive (returning nil or a valid value, never trapping).
  static let hostile: [String] = [
    "", " ", "   \t  ", "\u{0}", "a\u{0}b", "\u{0}\u{0}\u{0}",
    "99999999999999999999", "-1", "+1", "9223372036854775807", "9223372036854775808",
    "bytes 0-99999999999999999999/1", "bytes -5-10/100", "bytes */-1",
    "%FF%FE", "%", "%%", "%4", "%zz", "\\", "\"", "\"\"\"", "W/", "W/\"",
    "../../etc/passwd", "..\\..\\x", "/etc/passwd", "C:\\x", "\u{202E}gpj.exe",
    "日本語", "😀", "e\u{301}\u{302}\u{303}", "\u{FEFF}", "\r\n", "\u{7F}\u{85}",
    String(repeating: "a", count: 1000), String(repeating: "9", count: 100_000),
    String(repeating: "x/", count: 50_000), String(repeating: "\"", count: 100_001),
  ]

  /// `count` random strings built from `fragments` and random scalars.
  static func random(count: Int, seed: UInt64, fragments: [String]) -> [String] {
    var generator = SplitMix64(seed: seed)
    let pool = fragments + commonFragments
    return (0..<count).map { _ in
      var text = ""
      for _ in 0..<Int.random(in: 0...12, using: &generator) {
        if Int.random(in: 0..<8, using: &generator) == 0 {
          let value = UInt32.random(in: 0...0x10FFFF, using: &generator)
          text.unicodeScalars.append(Unicode.Scalar(value) ?? "?")
        } else {
          text += pool.randomElement(using: &generator) ?? ""
        }
      }
      return text
    }
  }

  private static let commonFragments = [
    " ", "\t", "0", "1", "9", "12", "00", "99999999999999999999", "9223372036854775807", "-", "+",
    ".", "..", "/", "\\", "\"", "'", ";", "=", ",", ":", "*", "%", "%41", "%FF", "%C3%AF", "\u{0}",
    "\u{202E}", "\u{200B}", "é", "😀", "a", "Z",
  ]
}
