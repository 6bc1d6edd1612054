import Testing

@testable import HaulCore

@Suite struct ContentDispositionTests {
  @Test(arguments: [
    // RFC 6266 §5 examples.
    ("Attachment; filename=example.html", "example.html"),
    ("INLINE; FILENAME= \"an example.html\"", "an example.html"),
    ("attachment; filename*= UTF-8''%e2%82%ac%20rates", "€ rates"),
    ("attachment; filename=\"EURO rates\"; filename*=utf-8''%e2%82%ac%20rates", "€ rates"),
    // RFC 8187 §3.2.2 example (Latin-1 with a language tag).
    ("attachment; filename*=iso-8859-1'en'%A3%20rates", "£ rates"),
    // filename* wins regardless of order.
    ("attachment; filename*=UTF-8''na%C3%AFve%20file.txt; filename=\"naive file.txt\"", "naïve file.txt"),
    ("attachment; filename*=UTF-8'en-US'a.txt", "a.txt"),
    // Quoted strings and escapes.
    ("attachment; filename=\"a\\\"b\\\\c.txt\"", "a\"b\\c.txt"),
    ("attachment; filename=\"semi;colon.txt\"", "semi;colon.txt"),
    ("attachment; filename=\"naïve.txt\"", "naïve.txt"),
    ("attachment; filename=\"\\ä.txt\"", "ä.txt"),
    // Leniency: bare values with spaces, no type, odd spacing, first occurrence wins.
    ("attachment; filename=my file.txt", "my file.txt"),
    ("attachment; filename=  spaced.txt  ; size=3", "spaced.txt"),
    ("filename=bare.txt", "bare.txt"),
    ("attachment;filename=first.txt;filename=second.txt", "first.txt"),
    ("attachment; foo=\"x;filename=no\"; filename=yes.txt", "yes.txt"),
    ("attachment; filename*=\"UTF-8''quoted%20ext.txt\"", "quoted ext.txt"),
    // Raw names pass through unsanitized.
    ("attachment; filename=\"../../etc/passwd\"", "../../etc/passwd"),
    // Broken filename* falls back to filename.
    ("attachment; filename*=UTF-8''%FF%FE.txt; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=UTF-8''%E2%82; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=UTF-8''%zz; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=UTF-8''50%; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=KOI8-R''%C1; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=no-quotes.txt; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=UTF-8'only-one-quote; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=UTF-8''; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename*=iso-8859-1''naïve; filename=fallback.txt", "fallback.txt"),
    ("attachment; filename=\"x\"junk; filename=second.txt", "second.txt"),
  ])
  func extractsFilename(_ header: String, _ expected: String) {
    #expect(ContentDisposition.filename(fromHeaderValue: header) == expected)
  }

  @Test(arguments: [
    "", " ", "attachment", "inline", "attachment;", "attachment; filename=", "attachment; filename=\"\"",
    "attachment; filename=\"unterminated", "attachment; filename=\"trailing backslash\\",
    "attachment; name=\"x.txt\"", "attachment; filenames=x.txt", "attachment; file name=x.txt",
    "attachment; filename*=UTF-8''%FF", "attachment; filename*=bogus''x", ";;;;", "=====", "\"\"\"",
  ])
  func findsNothing(_ header: String) {
    #expect(ContentDisposition.filename(fromHeaderValue: header) == nil)
  }

  @Test func decodesExtendedValues() {
    #expect(ContentDisposition.decodeExtendedValue(Array("UTF-8''%41%62c".utf8)) == "Abc")
    #expect(ContentDisposition.decodeExtendedValue(Array("utf8''%c3%a9".utf8)) == "é")
    #expect(ContentDisposition.decodeExtendedValue(Array("ISO-8859-1''%E9".utf8)) == "é")
    #expect(ContentDisposition.decodeExtendedValue(Array("latin1''%FF".utf8)) == "ÿ")
    #expect(ContentDisposition.decodeExtendedValue(Array("UTF-8''%00".utf8)) == "\u{0}")
    #expect(ContentDisposition.decodeExtendedValue(Array("UTF-8''%F0%9F%98%80".utf8)) == "😀")
    #expect(ContentDisposition.decodeExtendedValue(Array("UTF-8''%ED%A0%80".utf8)) == nil)  // surrogate
    #expect(ContentDisposition.decodeExtendedValue(Array("UTF-8''%C0%AF".utf8)) == nil)  // overlong "/"
  }

  @Test func survivesHostileInputs() {
    for text in FuzzInputs.hostile {
      _ = ContentDisposition.filename(fromHeaderValue: text)
      _ = ContentDisposition.filename(fromHeaderValue: "attachment; filename=" + text)
      _ = ContentDisposition.filename(fromHeaderValue: "attachment; filename*=UTF-8''" + text)
    }
    let long = String(repeating: "a", count: 100_000)
    #expect(
      ContentDisposition.filename(fromHeaderValue: "attachment; filename=\"\(long)\"")?.count == 100_000)
  }

  @Test func randomInputsNeverYieldEmptyNames() {
    let fragments = [
      "attachment", "; ", "filename", "filename*", "=", "\"", "\\", "UTF-8''", "iso-8859-1'en'", "%e2%82%ac",
      "x.txt",
    ]
    for text in FuzzInputs.random(count: 4000, seed: 0x6266, fragments: fragments) {
      if let name = ContentDisposition.filename(fromHeaderValue: text) {
        #expect(!name.isEmpty)
      }
    }
  }
}
