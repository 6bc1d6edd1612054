import Testing

@testable import Haul

/// The seal a finished file carries: one spelling, read back exactly, anything else refused.
@Suite struct FinishedFileSealTests {
  static let hash = String(repeating: "ab", count: 32)

  @Test func roundTrips() {
    for seal in [
      FinishedFileSeal(
        size: 300_000, modified: 1_764_612_345_123_456_789, changedBy: 1_764_612_346_000_000_000),
      FinishedFileSeal(size: 0, modified: 0, changedBy: 0, sha256: Self.hash),
    ] {
      #expect(FinishedFileSeal.decode(seal.encode()) == seal)
    }
    let text = "haul-seal 1\nsize 5\nmodified 7\nchanged-by 9\nsha-256 \(Self.hash)\n"
    #expect(
      FinishedFileSeal(size: 5, modified: 7, changedBy: 9, sha256: Self.hash).encode() == Array(text.utf8))
  }

  @Test(arguments: [
    "",
    "haul-seal 1\nsize 5\nmodified 7\nchanged-by 9",  // no final newline
    "haul-seal 2\nsize 5\nmodified 7\nchanged-by 9\n",  // another version
    "haul-seal 1\nsize -5\nmodified 7\nchanged-by 9\n",
    "haul-seal 1\nsize 05\nmodified 7\nchanged-by 9\n",  // a second spelling
    "haul-seal 1\nsize +5\nmodified 7\nchanged-by 9\n",
    "haul-seal 1\nsize 99999999999999999999\nmodified 7\nchanged-by 9\n",
    "haul-seal 1\nsize 9223372036854775808\nmodified 7\nchanged-by 9\n",
    "haul-seal 1\nmodified 7\nsize 5\nchanged-by 9\n",  // out of order
    "haul-seal 1\nsize 5\nmodified 7\nchanged-by 9\nsha-256 AB\n",
    "haul-seal 1\nsize 5\nmodified 7\nchanged-by 9\nsha-256 \(String(repeating: "AB", count: 32))\n",
    "haul-seal 1\nsize 5\nmodified 7\nchanged-by 9\nsha-256 \(hash)\nextra 1\n",
    "haul-seal 1\nsize 5\nmodified 7\nchanged-by 9\n\n",
    "haul-seal 1\r\nsize 5\nmodified 7\nchanged-by 9\n",
    "haul-seal 1\nsize  5\nmodified 7\nchanged-by 9\n",
  ])
  func refusesAnythingElse(text: String) {
    #expect(FinishedFileSeal.decode(Array(text.utf8)) == nil)
  }

  @Test func refusesOversizedInput() {
    let valid = FinishedFileSeal(size: 1, modified: 1, changedBy: 1).encode()
    #expect(
      FinishedFileSeal.decode(valid + [UInt8](repeating: 0x20, count: FinishedFileSeal.maximumSize)) == nil)
  }

  @Test func describesOnlyAnUntouchedFile() {
    let seal = FinishedFileSeal(size: 10, modified: 100, changedBy: 200)
    #expect(seal.describes(FileStatus(size: 10, modified: 100, changed: 150)))
    #expect(seal.describes(FileStatus(size: 10, modified: 100, changed: 200)))
    #expect(!seal.describes(FileStatus(size: 10, modified: 100, changed: 201)))  // chmod, touch -d, a write
    #expect(!seal.describes(FileStatus(size: 10, modified: 101, changed: 150)))
    #expect(!seal.describes(FileStatus(size: 11, modified: 100, changed: 150)))
  }
}
