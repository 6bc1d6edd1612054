import HaulTestSupport
import Testing

@testable import HaulCore

@Suite struct ByteQuantityTests {
  @Test(arguments: [
    ("0", Int64(0)),
    ("500", 500),
    ("500B", 500),
    ("500b", 500),
    ("500K", 512_000),
    ("10k", 10_240),
    ("10kb", 10_240),
    ("10KiB", 10_240),
    ("2M", 2_097_152),
    ("2MB", 2_097_152),
    ("2MiB", 2_097_152),
    ("2Mi", 2_097_152),
    ("1ki", 1024),
    ("2mib", 2_097_152),
    ("2 M", 2_097_152),
    ("1.5G", 1_610_612_736),
    ("1T", 1_099_511_627_776),
    ("1P", 1_125_899_906_842_624),
    ("1E", 1_152_921_504_606_846_976),
    ("7E", 8_070_450_532_247_928_832),
    ("0.5K", 512),
    ("0.3K", 307),  // 307.2 rounds down
    ("1.5", 1),
    ("1.999999999999999999999999K", 2047),  // digits past the 18th ignored
    ("007", 7),
    ("9223372036854775807", Int64.max),
    ("9223372036854775807B", Int64.max),
  ])
  func parsesQuantities(_ text: String, _ expected: Int64) {
    #expect(ByteQuantity.parse(text) == expected)
  }

  @Test(arguments: [
    "", " ", "K", "B", "-1", "-1K", "+1", " 1", "1 ", "1K ", "1.", ".5", "1..5", "1.5.5", "1,5K",
    "1KK", "1KBB", "1iB", "1X", "1Kb/s", "0x10", "1e3", "１", "1\u{0}", "1K\u{0}", "∞",
    "9223372036854775808", "99999999999999999999", "8E", "8589934592G", "9007199254740992K",
    "8388608T", "8192P",
  ])
  func rejectsInvalidQuantities(_ text: String) {
    #expect(ByteQuantity.parse(text) == nil)
  }

  @Test(arguments: [
    (Int64(0), "0 B"),
    (1, "1 B"),
    (999, "999 B"),
    (1000, "0.98 KiB"),
    (1023, "1.00 KiB"),
    (1024, "1.00 KiB"),
    (1536, "1.50 KiB"),
    (10_240, "10.0 KiB"),
    (12_897_485, "12.3 MiB"),
    (102_400, "100 KiB"),
    (1_022_976, "999 KiB"),
    (1_048_064, "1.00 MiB"),  // 1023.5 KiB rounds up past 999 KiB
    (1_073_741_824, "1.00 GiB"),
    (1_099_511_627_776, "1.00 TiB"),
    (Int64.max, "8.00 EiB"),
    (-1536, "-1.50 KiB"),
    (Int64.min, "-8.00 EiB"),
  ])
  func formatsSizes(_ bytes: Int64, _ expected: String) {
    #expect(ByteQuantity.format(bytes) == expected)
  }

  @Test func formatsRates() {
    #expect(ByteQuantity.formatRate(12_897_485) == "12.3 MiB/s")
    #expect(ByteQuantity.formatRate(512.4) == "512 B/s")
    #expect(ByteQuantity.formatRate(0) == "0 B/s")
    #expect(ByteQuantity.formatRate(-5) == "0 B/s")
    #expect(ByteQuantity.formatRate(.nan) == "0 B/s")
    #expect(ByteQuantity.formatRate(.infinity) == "8.00 EiB/s")
    #expect(ByteQuantity.formatRate(1e300) == "8.00 EiB/s")
    #expect(ByteQuantity.formatRate(.leastNonzeroMagnitude) == "0 B/s")
  }

  @Test func formatIsShortAndReadsBackAcrossUnitBoundaries() {
    for exponent in 0..<63 {
      for delta in [-1, 0, 1] as [Int64] {
        let bytes = (Int64(1) << exponent) &+ delta
        guard bytes >= 0 else { continue }
        let text = ByteQuantity.format(bytes)
        let number = text.split(separator: " ")[0]
        #expect(number.count <= 4, "\(bytes) → \(text)")
        // Reading the text back gives roughly the same number (3 significant digits).
        let unit = String(text.split(separator: " ")[1])
        let parsed = ByteQuantity.parse(number + (unit == "B" ? "" : String(unit.prefix(1))))
        if let parsed, bytes > 0 {
          let ratio = Double(parsed) / Double(bytes)
          #expect(ratio > 0.99 && ratio < 1.01, "\(bytes) → \(text)")
        }
      }
    }
  }

  @Test func survivesHostileAndRandomInputs() {
    let fragments = ["K", "k", "M", "G", "T", "E", "B", "iB", "ib", ".", "5", "1024"]
    for text in FuzzInputs.hostile + FuzzInputs.random(count: 4000, seed: 0xB17E5, fragments: fragments) {
      if let value = ByteQuantity.parse(text) {
        #expect(value >= 0)
        _ = ByteQuantity.format(value)
      }
    }
    var generator = SplitMix64(seed: 0xF0F0)
    for _ in 0..<4000 {
      let bytes =
        Int64.random(in: Int64.min...Int64.max, using: &generator)
        >> Int64.random(in: 0...63, using: &generator)
      #expect(!ByteQuantity.format(bytes).isEmpty)
      _ = ByteQuantity.formatRate(Double(bitPattern: generator.next()))
    }
  }
}
