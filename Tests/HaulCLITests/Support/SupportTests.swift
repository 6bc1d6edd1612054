import Foundation
import Testing

@Suite("test support")
struct SupportTests {
  @Test func byteMismatchFindsTheFirstDifference() {
    #expect(byteMismatch([1, 2, 3], [1, 2, 3]) == nil)
    #expect(byteMismatch([UInt8](), [UInt8]()) == nil)
    #expect(byteMismatch([1, 2, 3], [1, 9, 3]) == "3 bytes, expected 3; first difference at byte 1")
    #expect(byteMismatch([1, 2], [1, 2, 3]) == "2 bytes, expected 3; first difference at byte 2")
    #expect(byteMismatch([1, 2, 3][1...], [2, 3]) == nil)
  }

  @Test func accessLogLines() throws {
    let nginx = try #require(RealServer.parse(#"GET /f.bin 206 "bytes=100-" "\x22abc-1\x22" 4096"#))
    #expect(nginx.method == "GET" && nginx.uri == "/f.bin" && nginx.status == 206 && nginx.bodyBytes == 4096)
    #expect(nginx.range == "bytes=100-")
    #expect(nginx.ifRange.map(InteropChecks.unescape) == "\"abc-1\"")
    let lighttpd = try #require(RealServer.parse(#"GET /f.bin 200 "-" "-" 8388608"#))
    #expect(lighttpd.range == nil && lighttpd.ifRange == nil && lighttpd.bodyBytes == 8388608)
    let escaped = try #require(RealServer.parse(#"GET /f.bin 206 "bytes=5-" "\"123\"" 10"#))
    #expect(escaped.ifRange.map(InteropChecks.unescape) == "\"123\"")
  }
}
