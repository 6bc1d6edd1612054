import Testing

@testable import HaulCore

@Suite struct EntityTagTests {
  @Test(arguments: [
    ("\"xyzzy\"", "xyzzy", false),
    ("W/\"xyzzy\"", "xyzzy", true),
    ("w/\"xyzzy\"", "xyzzy", true),
    ("\"\"", "", false),
    ("W/\"\"", "", true),
    ("  \"5e1f-3b2a\"\t", "5e1f-3b2a", false),
    ("\"a!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\"", "a!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", false),
    ("\"naïve\"", "naïve", false),  // obs-text
  ])
  func parsesValidTags(_ text: String, _ opaque: String, _ isWeak: Bool) throws {
    let tag = try #require(EntityTag(headerValue: text))
    #expect(tag.opaque == opaque)
    #expect(tag.isWeak == isWeak)
    #expect(EntityTag(headerValue: tag.headerValue) == tag)
  }

  @Test(arguments: [
    "", " ", "xyzzy", "W/xyzzy", "\"xyzzy", "xyzzy\"", "W/ \"xyzzy\"", "W\"xyzzy\"", "/\"x\"",
    "\"a\"b\"", "\"a b\"", "\"a\tb\"", "\"a\u{0}b\"", "\"a\u{7F}\"", "\"x\" \"y\"", "\"x\",\"y\"",
    "\"x\"junk", "W/W/\"x\"", "*", "\u{0}\"x\"",
  ])
  func rejectsInvalidTags(_ text: String) {
    #expect(EntityTag(headerValue: text) == nil)
  }

  @Test func headerValueRoundTrips() throws {
    #expect(try #require(EntityTag(opaque: "abc")).headerValue == "\"abc\"")
    #expect(try #require(EntityTag(opaque: "abc", isWeak: true)).headerValue == "W/\"abc\"")
    #expect(try #require(EntityTag(headerValue: "w/\"abc\"")).headerValue == "W/\"abc\"")
    #expect(EntityTag(opaque: "a\"b") == nil)
    #expect(EntityTag(opaque: "a b") == nil)
    #expect(EntityTag(opaque: "a\u{0}") == nil)
  }

  /// The table from RFC 9110 §8.8.3.2.
  @Test func comparisonsFollowRFC9110() throws {
    let weak1 = try #require(EntityTag(headerValue: "W/\"1\""))
    let weak2 = try #require(EntityTag(headerValue: "W/\"2\""))
    let strong1 = try #require(EntityTag(headerValue: "\"1\""))
    #expect(!weak1.strongMatch(weak1))
    #expect(weak1.weakMatch(weak1))
    #expect(!weak1.strongMatch(weak2))
    #expect(!weak1.weakMatch(weak2))
    #expect(!weak1.strongMatch(strong1))
    #expect(weak1.weakMatch(strong1))
    #expect(strong1.strongMatch(strong1))
    #expect(strong1.weakMatch(strong1))
  }

  @Test func comparisonIsByteWise() throws {
    let composed = try #require(EntityTag(opaque: "\u{E9}"))
    let decomposed = try #require(EntityTag(opaque: "e\u{301}"))
    #expect(!composed.strongMatch(decomposed))
    #expect(composed != decomposed)
  }

  @Test func survivesHostileInputs() {
    for text in FuzzInputs.hostile {
      _ = EntityTag(headerValue: text)
    }
    #expect(
      EntityTag(headerValue: "\"" + String(repeating: "a", count: 100_000) + "\"")?.opaque.count == 100_000)
  }

  @Test func randomInputsRoundTrip() {
    let inputs = FuzzInputs.random(
      count: 4000, seed: 0xE7A6, fragments: ["W/", "w/", "\"", "\"abc\"", "W/\""])
    for text in inputs {
      guard let tag = EntityTag(headerValue: text) else { continue }
      #expect(!tag.opaque.utf8.contains(UInt8(ascii: "\"")))
      #expect(!tag.opaque.utf8.contains { $0 < 0x21 || $0 == 0x7F })
      #expect(EntityTag(headerValue: tag.headerValue) == tag)
    }
  }
}
