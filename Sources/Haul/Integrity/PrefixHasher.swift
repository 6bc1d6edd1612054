/// Digests of the whole file, computed front to back: bytes written exactly at the hashed end
/// are fed as they arrive (one connection needs no second read); whatever is left is read back
/// from the `.part` file when the download completes. Not thread-safe: the engine keeps it
/// behind its lock and uses it from one thread at a time.
final class PrefixHasher {
  private(set) var hashedUpTo: Int64 = 0
  private var streamed: [Checksum.Algorithm: MessageDigest] = [:]

  init() {
    streamed[.sha256] = try? MessageDigest(.sha256)
  }

  /// Feeds bytes just written at `offset` when they continue the hashed prefix.
  func feed(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
    guard offset == hashedUpTo, !bytes.isEmpty else { return }
    for digest in streamed.values { digest.update(bytes) }
    hashedUpTo += Int64(bytes.count)
  }

  /// The digests of `[0, total)` for `algorithms` (SHA-256 always), reading back what was not fed.
  func finish(part: PartFile, total: Int64, algorithms: Set<Checksum.Algorithm>) throws(HaulError)
    -> [Checksum.Algorithm: String]
  {
    var fresh: [Checksum.Algorithm: MessageDigest] = [:]
    for algorithm in algorithms.union([.sha256]) where streamed[algorithm] == nil {
      fresh[algorithm] = try MessageDigest(algorithm.digest)
    }
    let continuing = hashedUpTo <= total ? streamed : [:]
    if hashedUpTo > total {
      for (algorithm, _) in streamed { fresh[algorithm] = try MessageDigest(algorithm.digest) }
    }
    let resumeAt = continuing.isEmpty ? total : hashedUpTo
    let start = fresh.isEmpty ? resumeAt : 0
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var position = start
    while position < total {
      let wanted = Int(min(Int64(buffer.count), total - position))
      let read: Result<Int, SystemError> = buffer.withUnsafeMutableBytes { raw in
        do throws(SystemError) {
          return .success(
            try part.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]), at: position))
        } catch {
          return .failure(error)
        }
      }
      let count: Int
      switch read {
      case .success(let value): count = value
      case .failure(let error):
        throw HaulError(.fileSystem, FileErrorText.describe(error, path: part.path), underlying: error)
      }
      guard count > 0 else {
        throw HaulError(.fileSystem, "\(part.path) is shorter than the \(total) bytes it should hold")
      }
      buffer.withUnsafeBytes { bytes in
        let chunk = UnsafeRawBufferPointer(rebasing: bytes[0..<count])
        for digest in fresh.values { digest.update(chunk) }
        if position >= resumeAt {
          for digest in continuing.values { digest.update(chunk) }
        } else if position + Int64(count) > resumeAt {
          let tail = UnsafeRawBufferPointer(rebasing: bytes[Int(resumeAt - position)..<count])
          for digest in continuing.values { digest.update(tail) }
        }
      }
      position += Int64(count)
    }
    var result: [Checksum.Algorithm: String] = [:]
    for (algorithm, digest) in continuing.merging(fresh, uniquingKeysWith: { _, new in new }) {
      result[algorithm] = MessageDigest.hex(digest.finish())
    }
    return result
  }
}

@available(*, unavailable)
extension PrefixHasher: Sendable {}
