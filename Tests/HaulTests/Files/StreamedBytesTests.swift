import Testing

@testable import Haul

/// A stream target keeps the last bytes it wrote, so a resume's overlap can be compared.
@Suite struct StreamedBytesTests {
  static func bytes(_ range: Range<Int>) -> [UInt8] { range.map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

  static func read(_ kept: StreamedBytes, at offset: Int64, count: Int) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: count)
    let got = buffer.withUnsafeMutableBytes { kept.read(into: $0, at: offset) }
    return got.map { Array(buffer.prefix($0)) }
  }

  /// Written in pieces of every size around the ring's (smaller, equal, larger, wrapping),
  /// the last `kept` bytes read back as written; older ones are gone.
  @Test(arguments: [1, 4_096, 65_535, 65_536, 65_537, 200_000])
  func theLastBytesReadBackAsWritten(piece: Int) {
    let total = 300_001
    let all = Self.bytes(0..<total)
    var kept = StreamedBytes()
    var written = 0
    while written < total {
      let end = min(total, written + piece)
      all[written..<end].withUnsafeBytes { kept.append($0) }
      written = end
    }
    #expect(kept.count == Int64(total))
    let window = StreamedBytes.kept
    #expect(Self.read(kept, at: Int64(total - window), count: window) == Array(all[(total - window)...]))
    #expect(
      Self.read(kept, at: Int64(total - 10), count: 100) == Array(all[(total - 10)...]), "short at the end")
    #expect(Self.read(kept, at: Int64(total), count: 10) == [])
    #expect(Self.read(kept, at: Int64(total - window - 1), count: 10) == nil, "no longer kept")
  }

  @Test func fewerBytesThanTheRingAreAllKept() {
    var kept = StreamedBytes()
    let all = Self.bytes(0..<1000)
    all.withUnsafeBytes { kept.append($0) }
    #expect(Self.read(kept, at: 0, count: 1000) == all)
    #expect(Self.read(kept, at: -1, count: 10) == nil)
  }
}
