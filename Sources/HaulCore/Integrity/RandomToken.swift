/// Random tokens (secrets, session ids) from the system's CSPRNG.
package enum RandomToken {
  /// `count` random bytes as lower-case hex, `2 × count` digits.
  ///
  ///     let secret = RandomToken.hex(bytes: 16)  // 128 bits, 32 hex digits
  package static func hex(bytes count: Int) -> String {
    // A loop, not a closure capturing the generator: ThreadSanitizer faults on the address
    // of a captured empty value (the system generator has no state).
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    for _ in 0..<count { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
    return Checksum.hex(bytes)
  }
}
