import Testing

@testable import HaulCore

@Suite struct RandomTokenTests {
  /// Two lower-case hex digits per byte, whatever the byte (a zero byte is "00"); tokens differ.
  @Test func lowerCaseHexOfTheAskedLength() {
    let tokens = (0..<200).map { _ in RandomToken.hex(bytes: 20) }
    for token in tokens {
      #expect(token.utf8.count == 40, "\(token)")
      #expect(token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }, "\(token)")
    }
    #expect(Set(tokens).count == tokens.count)
    #expect(RandomToken.hex(bytes: 0).isEmpty)
  }
}
