import Testing

@testable import HaulCore

@Suite struct RetryAfterTests {
  @Test(arguments: [
    ("120", RetryAfter.seconds(120)),
    ("0", .seconds(0)),
    (" 5 ", .seconds(5)),
    ("9223372036854775807", .seconds(Int64.max)),
    ("Fri, 31 Dec 1999 23:59:59 GMT", .date(946_684_799)),
    ("Sun Nov  6 08:49:37 1994", .date(784_111_777)),
  ])
  func parsesValidValues(_ text: String, _ expected: RetryAfter) {
    #expect(RetryAfter(headerValue: text) == expected)
  }

  @Test(arguments: [
    "", " ", "-1", "+1", "1.5", "12s", "1 2", "9223372036854775808", "99999999999999999999", "soon",
    "120\u{0}", "Fri, 31 Dec 1999 23:59:59", "0x10", "１２０",
  ])
  func rejectsInvalidValues(_ text: String) {
    #expect(RetryAfter(headerValue: text) == nil)
  }

  @Test func delayIsClampedAndSaturates() {
    #expect(RetryAfter.seconds(30).delay(now: 1_000) == 30)
    #expect(RetryAfter.seconds(-3).delay(now: 0) == 0)  // Hand-built; the parser never makes it.
    #expect(RetryAfter.date(1_100).delay(now: 1_000) == 100)
    #expect(RetryAfter.date(900).delay(now: 1_000) == 0)
    #expect(RetryAfter.date(Int64.max).delay(now: -10) == Int64.max)
    #expect(RetryAfter.date(Int64.min).delay(now: 10) == 0)
  }

  @Test func survivesHostileAndRandomInputs() {
    let random = FuzzInputs.random(
      count: 4000, seed: 0x503, fragments: ["120", "Fri, 31 Dec 1999 23:59:59 GMT"])
    for text in FuzzInputs.hostile + random {
      guard let value = RetryAfter(headerValue: text) else { continue }
      for now in [Int64.min, -1, 0, 1_700_000_000, Int64.max] {
        #expect(value.delay(now: now) >= 0)
      }
    }
  }
}
