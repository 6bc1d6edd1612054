import Testing

@testable import HaulCore

@Suite struct ContentRangeTests {
  @Test(arguments: [
    // RFC 9110 §14.4 examples.
    ("bytes 42-1233/1234", ContentRange.range(first: 42, last: 1233, total: 1234)),
    ("bytes 42-1233/*", .range(first: 42, last: 1233, total: nil)),
    ("bytes */1234", .unsatisfied(total: 1234)),
    ("bytes 0-499/1234", .range(first: 0, last: 499, total: 1234)),
    ("bytes 500-999/*", .range(first: 500, last: 999, total: nil)),
    // Case, whitespace, edges.
    ("BYTES 0-0/1", .range(first: 0, last: 0, total: 1)),
    ("Bytes\t1-2/3", .range(first: 1, last: 2, total: 3)),
    ("  bytes   0 - 9 / 10  ", .range(first: 0, last: 9, total: 10)),
    ("bytes * / 0", .unsatisfied(total: 0)),
    ("bytes 007-008/0010", .range(first: 7, last: 8, total: 10)),
    (
      "bytes 0-9223372036854775806/9223372036854775807",
      .range(first: 0, last: 9_223_372_036_854_775_806, total: 9_223_372_036_854_775_807)
    ),
    ("bytes */9223372036854775807", .unsatisfied(total: Int64.max)),
  ])
  func parsesValidValues(_ text: String, _ expected: ContentRange) {
    #expect(ContentRange(headerValue: text) == expected)
  }

  @Test(arguments: [
    "", " ", "bytes", "bytes ", "bytes0-1/2", "bytes*/1", "items 0-1/2", "bytesx 0-1/2",
    "bytes 5-4/10",  // last < first
    "bytes 0-10/10",  // last >= total
    "bytes 0-9/5",
    "bytes -5-10/100", "bytes 5--10/100", "bytes +5-10/100", "bytes 0-+1/2",
    "bytes 0-99999999999999999999/1", "bytes 0-1/99999999999999999999", "bytes */99999999999999999999",
    "bytes 0-9223372036854775807/*",  // length would overflow
    "bytes 0-9/10 junk", "bytes 0-9/10,", "bytes 0-9/10\u{0}", "bytes 0-9/*x", "bytes */*", "bytes */",
    "bytes 0-/10", "bytes -9/10", "bytes 0-9", "bytes 0 9/10", "bytes 0-9/1 0", "bytes 1.5-2/3",
    "bytes ０-9/10", "bytes\u{0} 0-9/10", "bytes 0-9/10\n",
  ])
  func rejectsInvalidValues(_ text: String) {
    #expect(ContentRange(headerValue: text) == nil)
  }

  @Test func lengthAndTotal() {
    #expect(ContentRange(headerValue: "bytes 0-499/1234")?.length == 500)
    #expect(ContentRange(headerValue: "bytes 0-499/1234")?.total == 1234)
    #expect(ContentRange(headerValue: "bytes 0-499/*")?.total == nil)
    #expect(ContentRange(headerValue: "bytes */7")?.total == 7)
    #expect(ContentRange(headerValue: "bytes */7")?.length == nil)
    // Hand-built values that the parser would never produce do not trap.
    #expect(ContentRange.range(first: Int64.min, last: Int64.max, total: nil).length == nil)
    #expect(ContentRange.range(first: 5, last: 4, total: nil).length == nil)
  }

  @Test func survivesHostileInputs() {
    for text in FuzzInputs.hostile {
      #expect(ContentRange(headerValue: text) == nil, "\(text.prefix(40))")
    }
  }

  @Test func randomInputsYieldConsistentRanges() {
    let inputs = FuzzInputs.random(
      count: 4000, seed: 0xC0_17E7, fragments: ["bytes ", "bytes", "*/", "-", "/", "*"])
    for text in inputs + inputs.map({ "bytes " + $0 }) {
      switch ContentRange(headerValue: text) {
      case .range(let first, let last, let total):
        #expect(first >= 0 && first <= last && last < Int64.max)
        if let total { #expect(last < total) }
      case .unsatisfied(let total):
        #expect(total >= 0)
      case nil:
        break
      }
    }
  }
}
