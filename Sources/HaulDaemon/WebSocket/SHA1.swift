import CCrypto

/// SHA-1 for the WebSocket handshake's Sec-WebSocket-Accept, from OpenSSL libcrypto.
enum SHA1 {
  static func digest(_ bytes: [UInt8]) -> [UInt8] {
    guard let digest = ccrypto_digest_new("SHA1") else { return [] }
    defer { ccrypto_digest_free(digest) }
    _ = bytes.withUnsafeBytes { ccrypto_digest_update(digest, $0.baseAddress, $0.count) }
    var out = [UInt8](repeating: 0, count: 64)
    let length = out.withUnsafeMutableBufferPointer { ccrypto_digest_final(digest, $0.baseAddress) }
    return Array(out.prefix(length))
  }
}
