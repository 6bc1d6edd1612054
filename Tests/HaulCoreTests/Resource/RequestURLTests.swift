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

  @Test func headerFieldSyntax() {
    #expect(HeaderField.isValidName("X-Token"))
    #expect(!HeaderField.isValidName("Bad Name"))
    #expect(!HeaderField.isValidName(""))
    #expect(HeaderField.isValidValue("Bearer abc"))
    #expect(!HeaderField.isValidValue("a\r\nInjected: yes"))
  }
}
