import HaulCore

/// What a stream target (`PartFile(streamingTo:)`) was given: how many bytes, and the last of
/// them, up to `kept`. A resume without validators asks for the bytes before its range again
/// and compares them with these (`DownloadMachine.overlapLength`), which a stream cannot read back.
struct StreamedBytes {
  static let kept = Int(DownloadMachine.overlapLength)

  private(set) var count: Int64 = 0
  /// A ring: byte `i` of the stream is at `i % kept`, for the last `kept` bytes.
  private var ring = [UInt8](repeating: 0, count: kept)

  /// The bytes just written after the others.
  mutating func append(_ bytes: UnsafeRawBufferPointer) {
    let keep = min(bytes.count, Self.kept)
    if let base = bytes.baseAddress, keep > 0 {
      let first = base + (bytes.count - keep)
      var position = Int((count + Int64(bytes.count - keep)) % Int64(Self.kept))
      var done = 0
      ring.withUnsafeMutableBytes { ring in
        while done < keep {
          let piece = min(keep - done, Self.kept - position)
          ring.baseAddress?.advanced(by: position).copyMemory(from: first + done, byteCount: piece)
          done += piece
          position = (position + piece) % Self.kept
        }
      }
    }
    count += Int64(bytes.count)
  }

  /// Copies the kept bytes from `offset` into `buffer`; how many (0 at the end), or nil when
  /// `offset` is before the kept ones.
  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int? {
    guard offset >= count - min(count, Int64(Self.kept)), offset >= 0 else { return nil }
    let wanted = Int(min(Int64(buffer.count), max(0, count - offset)))
    ring.withUnsafeBytes { ring in
      for index in 0..<wanted {
        buffer[index] = ring[Int((offset + Int64(index)) % Int64(Self.kept))]
      }
    }
    return wanted
  }
}
