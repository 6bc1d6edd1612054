import HaulTestSupport
import Testing

@testable import HaulCore

@Suite struct HTTPDateTests {
  @Test(arguments: [
    // RFC 9110 §5.6.7: the same instant in all three formats.
    ("Sun, 06 Nov 1994 08:49:37 GMT", Int64(784_111_777)),
    ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
    ("Sun Nov  6 08:49:37 1994", 784_111_777),
    // Edges and leniency.
    ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
    ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
    ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400),
    ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648),
    ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
    ("Thu, 01 Mar 1900 00:00:00 GMT", -2_203_891_200),
    ("sun, 06 nov 1994 08:49:37 gmt", 784_111_777),
    ("  Sun, 06 Nov 1994 08:49:37 GMT\t", 784_111_777),
    ("Mon, 06 Nov 1994 08:49:37 GMT", 784_111_777),  // weekday not cross-checked
    ("Tue, 31 Dec 1974 23:59:60 GMT", 157_766_400),  // leap second rolls over
    ("Tuesday, 31-Dec-69 00:00:00 GMT", 3_155_673_600),  // 69 → 2069
    ("Monday, 01-Jun-70 00:00:00 GMT", 13_046_400),  // 70 → 1970
    ("Sun Nov 16 08:49:37 1994", 784_975_777),
  ])
  func parsesValidDates(_ text: String, _ expected: Int64) {
    #expect(HTTPDate.parse(text) == expected)
  }

  @Test(arguments: [
    "", " ", "Sun", "Sun,", "0", "784111777",
    "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 GMT+1",
    "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
    "Sun,06 Nov 1994 08:49:37 GMT", "Sun, 06  Nov 1994 08:49:37 GMT", "Sun, 06 November 1994 08:49:37 GMT",
    "Sun, 06 Nov 19945 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT junk", "Xyz, 06 Nov 1994 08:49:37 GMT",
    "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
    "Sun Nov 6 08:49:37 1994", "Sun Nov  06 08:49:37 1994", "Sun Nov  6 08:49:37 94",
    "Sun Nov  6 08:49:37 1994 GMT",
    "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT",
    "Sun, 29 Feb 2001 00:00:00 GMT", "Sun, 32 Jan 1994 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
    "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 -8:49:37 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT\u{0}", "Sun, 0\u{0} Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT\n",
    "Sun, ０６ Nov 1994 08:49:37 GMT",
  ])
  func rejectsInvalidDates(_ text: String) {
    #expect(HTTPDate.parse(text) == nil)
  }

  @Test(arguments: [
    (Int64(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"),
    (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
    (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
    (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
    (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
    (-62_167_219_200, "Sat, 01 Jan 0000 00:00:00 GMT"),
  ])
  func formatsIMFFixdate(_ unixTime: Int64, _ expected: String) {
    #expect(HTTPDate.format(unixTime) == expected)
  }

  @Test func formatRefusesYearsOutsideFourDigits() {
    #expect(HTTPDate.format(253_402_300_800) == nil)
    #expect(HTTPDate.format(-62_167_219_201) == nil)
    #expect(HTTPDate.format(Int64.max) == nil)
    #expect(HTTPDate.format(Int64.min) == nil)
  }

  @Test func calendarMathRoundTripsEveryDayOverCenturies() {
    // 1600-03-01 through 2400-02-29 covers every leap-year rule both ways.
    let start = HTTPDate.daysFromCivil(year: 1600, month: 3, day: 1)
    let end = HTTPDate.daysFromCivil(year: 2400, month: 2, day: 29)
    var expected = (year: Int64(1600), month: Int64(3), day: Int64(1))
    for days in start...end {
      let civil = HTTPDate.civilFromDays(days)
      #expect(civil == expected)
      if civil != expected { break }
      #expect(HTTPDate.daysFromCivil(year: civil.year, month: civil.month, day: civil.day) == days)
      expected.day += 1
      if expected.day > HTTPDate.daysInMonth(expected.month, year: expected.year) {
        expected.day = 1
        expected.month += 1
        if expected.month > 12 {
          expected.month = 1
          expected.year += 1
        }
      }
    }
  }

  @Test func formatThenParseRoundTrips() throws {
    var generator = SplitMix64(seed: 0xDA7E)
    for _ in 0..<3000 {
      let time = Int64.random(in: -62_167_219_200...253_402_300_799, using: &generator)
      let text = try #require(HTTPDate.format(time))
      #expect(HTTPDate.parse(text) == time, "\(text)")
    }
  }

  @Test func survivesHostileInputs() {
    for text in FuzzInputs.hostile {
      #expect(HTTPDate.parse(text) == nil)
    }
  }

  @Test func randomInputsParseOnlyToFormattableTimes() {
    let fragments = [
      "Sun", "Sunday", ", ", "Nov", "Feb", "-", " ", "  ", "06", "6", "29", "1994", "94", "08:49:37",
      "23:59:60",
      "GMT", "Sun, 06 Nov 1994 ", "Sun Nov  6 ", "Sunday, 06-Nov-94 ",
    ]
    for text in FuzzInputs.random(count: 4000, seed: 0x1994, fragments: fragments) {
      guard let time = HTTPDate.parse(text) else { continue }
      // Every parsed time lies in years 0000–9999 (plus a possible leap second).
      #expect(time >= -62_167_219_200 && time <= 253_402_300_800)
    }
  }
}
