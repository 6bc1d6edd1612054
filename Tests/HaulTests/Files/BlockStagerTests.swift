import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// One connection's bytes reach the file exactly, whatever the chunking; only bytes in the
/// file count as written, and waiting bytes can be flushed or dropped.
@Suite struct BlockStagerTests {
  static let block = 4 * PartFile.directAlignment

  static func contents(_ part: PartFile) throws -> [UInt8] {
    try FileIO.readAll(path: part.path, limit: 1 << 30).get()
  }

  static func append(
    _ body: [UInt8], from start: Int, to end: Int, at offset: Int64, chunks: inout SplitMix64,
    into stager: BlockStager
  ) throws {
    var position = start
    while position < end {
      let count = min(end - position, 1 + Int(chunks.next() % 7_000))
      let written = try body.withUnsafeBytes {
        try stager.append(
          UnsafeRawBufferPointer(rebasing: $0[position..<position + count]),
          at: offset + Int64(position - start))
      }
      position += count
      #expect(written <= offset + Int64(position - start))
      #expect(stager.receivedThrough == offset + Int64(position - start))
    }
  }

  @Test(arguments: [true, false])
  func bytesFromAnUnalignedOffsetLandExactly(directIO: Bool) throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path, directIO: directIO)
    let body = TestResource.random(size: 100_000, seed: 81)
    let offset: Int64 = 1_234
    let stager = BlockStager(file: part, blockSize: Self.block)
    var chunks = SplitMix64(seed: 81)
    try Self.append(body, from: 0, to: body.count, at: offset, chunks: &chunks, into: stager)
    if part.writesDirectly {
      // Whole blocks only: the head up to the first boundary, then blocks after it.
      let boundary = Int64(PartFile.directAlignment)
      #expect((stager.writtenThrough - boundary) % Int64(Self.block) == 0)
      #expect(stager.isHolding)
    } else {
      #expect(stager.writtenThrough == offset + Int64(body.count))
    }
    #expect(try stager.flush() == offset + Int64(body.count))
    #expect(!stager.isHolding)
    let file = try Self.contents(part)
    #expect(file.count == Int(offset) + body.count)
    #expect(Array(file[Int(offset)...]) == body)
  }

  @Test func waitingBytesAreNotInTheFileUntilFlushed() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    try #require(part.writesDirectly, "direct I/O on the test's file system")
    let stager = BlockStager(file: part, blockSize: Self.block)
    let body = TestResource.random(size: Self.block + 100, seed: 82)
    let written = try body.withUnsafeBytes { try stager.append($0, at: 0) }
    #expect(written == Int64(Self.block))
    #expect(stager.receivedThrough == Int64(body.count) && stager.isHolding)
    #expect(try Self.contents(part).count == Self.block)
    stager.discard()
    #expect(stager.receivedThrough == Int64(Self.block) && !stager.isHolding)
    #expect(try Self.contents(part) == Array(body[0..<Self.block]))
  }

  @Test func flushWritesEveryBlockAndTheRest() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let stager = BlockStager(file: part, blockSize: Self.block)
    let body = TestResource.random(size: 3 * Self.block + 100, seed: 86)
    try body.withUnsafeBytes { _ = try stager.append($0, at: 0) }
    #expect(try stager.flush() == Int64(body.count))
    #expect(try Self.contents(part) == body)
  }

  /// Chunks shorter than the way to the first boundary: blocks still start on it.
  @Test func aHeadInSeveralChunks() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let stager = BlockStager(file: part, blockSize: Self.block)
    let body = TestResource.random(size: 50_000, seed: 87)
    var position = 0
    for count in [10, 20, 3_000, 46_970] {
      let written = try body.withUnsafeBytes {
        try stager.append(
          UnsafeRawBufferPointer(rebasing: $0[position..<position + count]), at: Int64(100 + position))
      }
      position += count
      if position <= 3_030 { #expect(written == Int64(100 + position)) }
    }
    #expect(try stager.flush() == 50_100)
    #expect(Array(try Self.contents(part)[100...]) == body)
    // No write was refused for its alignment (that would turn direct I/O off).
    let fresh = try PartFile(path: directory.file("g.part").path)
    #expect(part.writesDirectly == fresh.writesDirectly)
  }

  @Test func bytesElsewhereFlushTheWaitingOnesFirst() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let stager = BlockStager(file: part, blockSize: Self.block)
    let first = TestResource.random(size: 5_000, seed: 83)
    let second = TestResource.random(size: 3_000, seed: 84)
    try first.withUnsafeBytes { _ = try stager.append($0, at: 0) }
    try second.withUnsafeBytes { _ = try stager.append($0, at: 10_000) }
    #expect(try stager.flush() == 13_000)
    let file = try Self.contents(part)
    #expect(Array(file[0..<5_000]) == first)
    #expect(Array(file[10_000..<13_000]) == second)
  }

  /// With the file's hasher, one connection's bytes are hashed as they are written, whatever
  /// the chunking: from the file's start nothing is read back; after earlier bytes (a resume),
  /// those are read back and inline hashing takes over once the read-back has caught up.
  @Test(arguments: [(0, true), (0, false), (5_000, true), (5_000, false)])
  func bytesAreHashedWhileWritten(offset: Int, directIO: Bool) throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path, directIO: directIO)
    let body = TestResource.random(size: 1_000_000, seed: 85)
    try body.withUnsafeBytes { try part.write(UnsafeRawBufferPointer(rebasing: $0[0..<offset]), at: 0) }
    let batch = 64 << 10
    let hasher = PrefixHasher(part: part, algorithms: [.sha256], batch: Int64(batch))
    hasher.advance(to: Int64(offset))
    let stager = BlockStager(file: part, blockSize: Self.block)
    var chunks = SplitMix64(seed: 85)
    var position = offset
    while position < body.count {
      let count = min(body.count - position, 1 + Int(chunks.next() % 9_000))
      let written = try body.withUnsafeBytes {
        try stager.append(
          UnsafeRawBufferPointer(rebasing: $0[position..<position + count]), at: Int64(position),
          hasher: hasher)
      }
      hasher.advance(to: written)
      position += count
    }
    hasher.advance(to: try stager.flush(hasher: hasher))
    let digests = try hasher.finish(total: Int64(body.count), algorithms: [.sha256])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
    if offset == 0 {
      #expect(hasher.bytesReadBack == 0)
    } else {
      #expect(hasher.bytesReadBack >= Int64(offset))
      #expect(hasher.bytesReadBack <= Int64(offset + 2 * batch + 2 * Self.block))
    }
  }
}
