import HaulRPC
import Testing

@Suite struct JSONValueTests {
  @Test(arguments: [
    (#"null"#, JSONValue.null),
    (#"true"#, .bool(true)),
    (#"false"#, .bool(false)),
    (#"0"#, .integer(0)),
    (#"-42"#, .integer(-42)),
    (#"9223372036854775807"#, .integer(.max)),
    (#"-9223372036854775808"#, .integer(.min)),
    // A fraction or an exponent makes a double; more digits than Int64 holds keep their text.
    (#"1.5"#, .double(1.5)),
    (#"1e3"#, .double(1000)),
    (#"1.0"#, .double(1)),
    (#"9223372036854775808"#, .number("9223372036854775808")),
    (#"[-12345678901234567890]"#, .array([.number("-12345678901234567890")])),
    (#"{"a":12345678901234567890}"#, .object(["a": .number("12345678901234567890")])),
    (#""a\"b\\c\u00e9\n""#, .string("a\"b\\c\u{e9}\n")),
    (#"[]"#, .array([])),
    (#"[1,"x",[null]]"#, .array([1, "x", [nil]])),
    (#"{"b":1,"a":{"c":[]}}"#, .object(["a": ["c": []], "b": 1])),
    (#"{"a\"\u00e9\ud83d\ude00\n":[{"":1}]}"#, .object(["a\"é😀\n": [["": 1]]])),
    // JSONDecoder's one leniency: a trailing comma.
    (#"[1,]"#, .array([1])),
    (#" { "k" : [ true , false ] } "#, .object(["k": [true, false]])),
  ])
  func parsesEveryKind(text: String, expected: JSONValue) throws {
    #expect(try JSONValue.parse(Array(text.utf8)) == expected)
  }

  @Test(arguments: [
    "", "{", "{\"a\"}", "nul", "01", "\"unterminated", "[1] [2]", "{'a':1}", "1e999", "NaN", "[1 // c\n]",
    #""\ud800""#, #"{"\ud800":1}"#, "[1 2]", "{\"a\":1 \"b\":2}", "[,]", "\"\u{1}\"", "-", "[01]",
  ])
  func refusesWhatIsNotJSON(text: String) {
    #expect(throws: JSONParseError.invalid) { try JSONValue.parse(Array(text.utf8)) }
  }

  @Test func refusesInvalidUTF8() {
    #expect(throws: JSONParseError.invalid) { try JSONValue.parse([0x22, 0xFF, 0xFE, 0x22]) }
    #expect(throws: JSONParseError.invalid) {
      try JSONValue.parse([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D])
    }
  }

  @Test func refusesRepeatedMembers() {
    #expect(throws: JSONParseError.invalid) { try JSONValue.parse(Array(#"{"id":1,"id":2}"#.utf8)) }
    #expect(throws: JSONParseError.invalid) { try JSONValue.parse(Array(#"{"a":1,"\u0061":2}"#.utf8)) }
  }

  @Test func refusesMoreValuesThanTheLimit() {
    let text = "[" + Array(repeating: "1", count: 11).joined(separator: ",") + "]"
    #expect(throws: JSONParseError.tooManyValues(limit: 10)) {
      try JSONValue.parse(Array(text.utf8), maximumValues: 10)
    }
  }

  @Test func refusesDeepNestingBeforeDecoding() throws {
    let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
    #expect(throws: JSONParseError.tooDeep(limit: JSONValue.maximumDepth)) {
      try JSONValue.parse(Array(deep.utf8))
    }
    let deepObjects =
      String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)
    #expect(throws: JSONParseError.tooDeep(limit: JSONValue.maximumDepth)) {
      try JSONValue.parse(Array(deepObjects.utf8))
    }
    let depth = JSONValue.maximumDepth
    let fits = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    #expect(try JSONValue.parse(Array(fits.utf8)) != .null)
  }

  @Test func bracketsInsideStringsDoNotCountAsNesting() throws {
    let text = "[\"" + String(repeating: "[{\\\"", count: 200) + "\"]"
    #expect(try JSONValue.parse(Array(text.utf8)).array?.count == 1)
  }

  @Test func serializesCompactlyInMemberOrder() {
    let value: JSONValue = ["id": "a", "jsonrpc": "2.0", "result": ["x", 1, true, nil, .double(0.5)]]
    #expect(value.serializedString == #"{"id":"a","jsonrpc":"2.0","result":["x",1,true,null,0.5]}"#)
  }

  @Test func escapesControlCharactersAndLineSeparators() {
    let value = JSONValue.string("q\"b\\\n\r\t\u{1}\u{7F}\u{2028}\u{2029}é😀")
    #expect(value.serializedString == #""q\"b\\\n\r\t\u0001\u007f\u2028\u2029é😀""#)
  }

  @Test func nonFiniteDoublesBecomeNull() {
    #expect(JSONValue.array([.double(.infinity), .double(.nan)]).serializedString == "[null,null]")
  }

  @Test func serializedTextParsesBackToTheSameValue() throws {
    let value: JSONValue = [
      "s": "ü\u{0}\"", "n": [1, -2, .double(3.25)], "o": ["deep": [["x": nil]]], "b": false,
    ]
    #expect(try JSONValue.parse(value.serialized) == value)
  }

  @Test func objectKeepsInsertionOrderAndReplacesInPlace() {
    var object: JSONObject = ["b": 1, "a": 2]
    object["b"] = 3
    object["c"] = 4
    #expect(object.keys == ["b", "a", "c"])
    object["a"] = nil
    #expect(object.keys == ["b", "c"])
    #expect(object == ["c": 4, "b": 3])
  }
}
