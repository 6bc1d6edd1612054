import CCrypto

/// An incremental hash over OpenSSL's EVP API. Not thread-safe: one owner feeds it.
final class MessageDigest {
  enum Algorithm: String, Sendable, CaseIterable {
    case sha256 = "SHA256"
    case sha512 = "SHA512"
    case sha1 = "SHA1"
    case md5 = "MD5"
  }

  private let context: OpaquePointer

  init(_ algorithm: Algorithm) throws(HaulError) {
    guard let context = ccrypto_digest_new(algorithm.rawValue) else {
      throw HaulError(.generic, "OpenSSL has no \(algorithm.rawValue) digest")
    }
    self.context = context
  }

  deinit { ccrypto_digest_free(context) }

  func update(_ bytes: UnsafeRawBufferPointer) {
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    _ = ccrypto_digest_update(context, base, bytes.count)
  }

  func update(_ bytes: some Collection<UInt8>) {
    Array(bytes).withUnsafeBytes { update($0) }
  }

  /// The digest of everything fed so far; the running state is left untouched.
  func finish() -> [UInt8] {
    guard let copy = ccrypto_digest_copy(context) else { return [] }
    defer { ccrypto_digest_free(copy) }
    var out = [UInt8](repeating: 0, count: 64)
    let length = out.withUnsafeMutableBufferPointer { ccrypto_digest_final(copy, $0.baseAddress) }
    return Array(out.prefix(length))
  }

  static func hex(_ bytes: [UInt8]) -> String { Checksum.hex(bytes) }
}

@available(*, unavailable)
extension MessageDigest: Sendable {}

extension Checksum.Algorithm {
  /// The OpenSSL digest that computes it.
  var digest: MessageDigest.Algorithm {
    switch self {
    case .sha256: .sha256
    case .sha512: .sha512
    case .sha1: .sha1
    case .md5: .md5
    }
  }
}
