/// Sizes and rates on the command line (`--limit-rate 2M`, `--max-size 1.5G`) and in output.
///
/// Multiples are binary, as in curl and wget: `K` is 1024, `M` is 1024², and so on.
public enum ByteQuantity {
  /// Parses `500`, `10k`, `2M`, `2MB`, `2Mi`, `2MiB`, `1.5G`, `1T` into bytes; nil for anything else.
  ///
  /// Grammar: digits, an optional `.` and fraction digits, optional spaces, then an optional
  /// unit — `B`, or one of `K M G T P E` followed by nothing, `B`, `i` or `iB` — all
  /// case-insensitive. Fractions are computed exactly and rounded down to whole bytes
  /// (`1.5K` is 1536); digits past the 18th after the point are ignored. Signs, leading
  /// or trailing spaces, empty text and values above `Int64.max` are rejected.
  public static func parse(_ text: String) -> Int64? {
    var scanner = ByteScanner(text)
    guard let whole = scanner.readNumber() else { return nil }
    var fraction: UInt64 = 0
    var scale: UInt64 = 1
    if scanner.consume(UInt8(ascii: ".")) {
      var digits = 0
      while let byte = scanner.peek, ByteScanner.isDigit(byte) {
        _ = scanner.consume(byte)
        digits += 1
        if digits <= 18 {
          fraction = fraction * 10 + UInt64(byte - 0x30)
          scale *= 10
        }
      }
      guard digits > 0 else { return nil }
    }
    let unitStart = scanner.index
    while scanner.consume(0x20) {}
    let unit = scanner.bytes[scanner.index...].map(ByteScanner.lowercased)
    // Spaces may only separate a number from its unit ("2 M"), never trail it.
    guard !unit.isEmpty || scanner.index == unitStart else { return nil }
    guard let multiplier = multiplier(forUnit: unit) else { return nil }

    // 128-bit products cannot overflow: whole < 2^63, fraction < 10^18 and multiplier <= 2^60.
    let bytes =
      UInt128(UInt64(whole)) * UInt128(multiplier)
      + UInt128(fraction) * UInt128(multiplier) / UInt128(scale)
    guard bytes <= UInt128(UInt64(Int64.max)) else { return nil }
    return Int64(UInt64(bytes))
  }

  /// Human-readable size: `0 B`, `999 B`, `1.00 KiB`, `12.3 MiB`, `123 GiB`.
  ///
  /// Three significant digits, rounded to nearest, in the largest binary unit that keeps the
  /// number below 1000 (so `1000 B` shows as `0.98 KiB` and widths stay stable in progress
  /// lines). Negative values get a leading `-`.
  public static func format(_ bytes: Int64) -> String {
    let sign = bytes < 0 ? "-" : ""
    let magnitude = UInt128(bytes.magnitude)
    if magnitude < 1000 { return sign + String(bytes.magnitude) + " B" }
    for (power, unit) in units.enumerated() {
      let divisor = UInt128(1) << (10 * (power + 1))
      let isLast = power == units.count - 1
      // Try two, then one, then no decimals; the first that stays below 1000 wins.
      let hundredths = (magnitude * 100 + divisor / 2) / divisor
      if hundredths < 1000 {
        return sign + String(hundredths / 100) + "." + twoDigits(hundredths % 100) + " " + unit
      }
      let tenths = (magnitude * 10 + divisor / 2) / divisor
      if tenths < 1000 {
        return sign + String(tenths / 10) + "." + String(tenths % 10) + " " + unit
      }
      let whole = (magnitude + divisor / 2) / divisor
      if whole < 1000 || isLast {
        return sign + String(whole) + " " + unit
      }
    }
    return sign + String(bytes.magnitude) + " B"  // Unreachable: EiB always answers.
  }

  /// Human-readable rate: `format` of the rounded value plus `/s`, e.g. `12.3 MiB/s`.
  ///
  /// NaN and negative rates (a clock step, no samples yet) show as `0 B/s`; rates beyond
  /// `Int64.max` saturate.
  public static func formatRate(_ bytesPerSecond: Double) -> String {
    let bytes: Int64
    if bytesPerSecond.isNaN || bytesPerSecond <= 0 {
      bytes = 0
    } else if bytesPerSecond >= 9_223_372_036_854_775_807.0 {
      bytes = Int64.max
    } else {
      bytes = Int64(bytesPerSecond.rounded())
    }
    return format(bytes) + "/s"
  }

  // MARK: - Private

  private static let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

  /// Bytes per unit for a lowercased unit suffix, or nil if it is not one.
  private static func multiplier(forUnit unit: [UInt8]) -> UInt64? {
    if unit.isEmpty || unit == [UInt8(ascii: "b")] { return 1 }
    guard let letter = unit.first,
      let power = Array("kmgtpe".utf8).firstIndex(of: letter)
    else { return nil }
    let rest = unit.dropFirst()
    guard rest.isEmpty || ["b", "i", "ib"].contains(where: { rest.elementsEqual($0.utf8) }) else {
      return nil
    }
    return 1 << (10 * UInt64(power + 1))
  }

  private static func twoDigits(_ value: UInt128) -> String {
    value < 10 ? "0" + String(value) : String(value)
  }
}
