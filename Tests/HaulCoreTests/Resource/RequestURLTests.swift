import Testing

@testable import HaulCore

@Suite struct RequestURLTests {
  @Test(arguments: [
    ("http://h/a b", "http://h/a%20b"),
    ("http://h/ü", "http://h/%C3%BC"),
    ("https://h:8080/p?q=1 2#frag", "https://h:8080/p?q=1%202"),
    ("http://h", "http://h/"),
    ("  http://h/x  ", "http://h/x"),
    ("HTTP://h/already%20encoded", "http://h/already%20encoded"),
    ("http://user:pw@h/\"q\"", "http://user:pw@h/%22q%22"),
  ])
  func normalizes(input: String, expected: String) throws {
    #expect(try RequestURL.normalize(input) == expected)
  }

  @Test(arguments: [
    "", "h/x", "gopher://h/x", "file:///etc/passwd", "http:///x", "http://:80/x", "http://a b/x",
  ])
  func rejects(input: String) {
    #expect(throws: HaulError.self) { try RequestURL.normalize(input) }
  }

  /// Only the ends go; what is between (combining marks, inner spaces) is kept whole.
  @Test(arguments: [
    ("", ""), ("   ", ""), ("x", "x"), (" \t a b \r\n", "a b"), ("\u{00A0}n\u{2003}", "n"),
    ("e\u{301} ", "e\u{301}"), (" \u{301}x", "\u{301}x"), ("文 件", "文 件"),
  ])
  func trimsWhitespaceAtTheEnds(input: String, expected: String) {
    #expect(input.trimmingWhitespace() == expected)
    #expect(input[...].trimmingWhitespace() == expected)
  }

  @Test func headerFieldSyntax() {
    #expect(HeaderField.isValidName("X-Token"))
    #expect(!HeaderField.isValidName("Bad Name"))
    #expect(!HeaderField.isValidName(""))
    #expect(HeaderField.isValidValue("Bearer abc"))
    #expect(!HeaderField.isValidValue("a\r\nInjected: yes"))
  }
}
