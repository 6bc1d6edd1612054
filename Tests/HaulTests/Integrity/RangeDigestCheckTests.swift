import Foundation
import Testing

@testable import Haul

@Suite struct RangeDigestCheckTests {
  static func head(status: Int = 206, _ headers: [(String, String)]) -> ResponseHead {
    var fields = HTTPHeaders()
    for (name, value) in headers { fields.add(name: name, value: value) }
    return ResponseHead(status: status, headers: fields, finalURL: "http://127.0.0.1/f")
  }

  static let part: [UInt8] = Array("the bytes of one range".utf8)
  static var digestHeader: (String, String) {
    ("Content-Digest", "sha-256=:\(IntegrityTests.base64(part)):")
  }

  static func feed(_ check: RangeDigestCheck, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { check.update($0) }
  }

  @Test func aCompleteMatchingBodyPasses() throws {
    let check = try #require(
      RangeDigestCheck(head: Self.head([Self.digestHeader]), range: ByteRange(start: 10, end: 32)))
    Self.feed(check, Array(Self.part[0..<5]))
    Self.feed(check, Array(Self.part[5...]))
    #expect(check.finish() == .matched)
  }

  @Test func aFlippedByteIsReportedWithTheActualDigest() throws {
    let check = try #require(
      RangeDigestCheck(head: Self.head([Self.digestHeader]), range: ByteRange(start: 10, end: 32)))
    var bad = Self.part
    bad[3] ^= 1
    Self.feed(check, bad)
    #expect(check.finish() == .mismatched(actual: IntegrityTests.hex(bad)))
  }

  @Test func aShortBodyIsIncompleteNotAMismatch() throws {
    let check = try #require(
      RangeDigestCheck(head: Self.head([Self.digestHeader]), range: ByteRange(start: 10, end: 32)))
    Self.feed(check, Array(Self.part[0..<10]))
    #expect(check.finish() == .incomplete)
  }

  @Test func onlyUnencodedPartialResponsesWithAUsableDigestAreChecked() {
    let range = ByteRange(start: 0, end: 22)
    #expect(RangeDigestCheck(head: Self.head(status: 200, [Self.digestHeader]), range: range) == nil)
    #expect(
      RangeDigestCheck(head: Self.head([Self.digestHeader, ("Content-Encoding", "gzip")]), range: range)
        == nil)
    #expect(RangeDigestCheck(head: Self.head([("Content-Digest", "sha-256=:short:")]), range: range) == nil)
    #expect(RangeDigestCheck(head: Self.head([]), range: range) == nil)
  }

  @Test func theStrongestAlgorithmIsUsed() throws {
    let both =
      "sha-256=:\(IntegrityTests.base64(Self.part)):, sha-512=:\(IntegrityTests.base64(Self.part, .sha512)):"
    let check = try #require(
      RangeDigestCheck(head: Self.head([("Content-Digest", both)]), range: ByteRange(start: 0, end: 22)))
    #expect(check.algorithm == .sha512)
  }
}
