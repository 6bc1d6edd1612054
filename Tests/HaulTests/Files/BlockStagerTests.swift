import Dispatch
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// One transfer's bytes reach the file exactly, whatever the chunking, written on the I/O
/// lane; only bytes in the file are reported written; waiting bytes can be flushed or
/// dropped; a transfer whose blocks all wait for the disk is told to pause, and told again
/// when there is room.
@Suite struct BlockStagerTests {
  static let block = 4 * PartFile.directAlignment

  /// What the lane reported.
  final class Reports: Sendable {
    let written = Locked<[Int64]>([])
    let failures = Locked<[SystemError]>([])
    let roomAgain = Locked(0)

    var last: Int64? { written.withLock { $0.last } }
  }

  static func make(
    _ part: PartFile, blocks: Int = 2, blockSize: Int = block, onWritten: (@Sendable (Int64) -> Void)? = nil
  ) -> (BlockStager, DownloadIO, Reports) {
    let io = DownloadIO(part: part, statePath: part.path + ".haul")
    let reports = Reports()
    let stager = BlockStager(
      file: part, io: io, blockSize: blockSize, blocks: blocks,
      callbacks: BlockStager.Callbacks(
        written: { through in
          reports.written.withLock { $0.append(through) }
          onWritten?(through)
        },
        failed: { error in reports.failures.withLock { $0.append(error) } },
        roomAgain: { reports.roomAgain.withLock { $0 += 1 } }))
    return (stager, io, reports)
  }

  /// Waits for every write handed to the lane so far.
  static func settle(_ stager: BlockStager) {
    let done = DispatchSemaphore(value: 0)
    stager.finish { done.signal() }
    done.wait()
  }

  static func contents(_ part: PartFile) throws -> [UInt8] {
    try FileIO.readAll(path: part.path, limit: 1 << 30).get()
  }

  /// Appends `body[start..<end]` at `offset` in random chunks, waiting for room when told to.
  static func append(
    _ body: [UInt8], from start: Int, to end: Int, at offset: Int64, chunks: inout SplitMix64,
    into stager: BlockStager, hasher: PrefixHasher? = nil
  ) {
    var position = start
    while position < end {
      let count = min(end - position, 1 + Int(chunks.next() % 7_000))
      if !stager.reserveRoom(for: count) { settle(stager) }
      body.withUnsafeBytes {
        stager.append(
          UnsafeRawBufferPointer(rebasing: $0[position..<position + count]),
          at: offset + Int64(position - start),
          hasher: hasher)
      }
      position += count
    }
  }

  @Test(arguments: [true, false])
  func bytesFromAnUnalignedOffsetLandExactly(directIO: Bool) throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path, directIO: directIO)
    let body = TestResource.random(size: 100_000, seed: 81)
    let offset: Int64 = 1_234
    let (stager, _, reports) = Self.make(part)
    var chunks = SplitMix64(seed: 81)
    Self.append(body, from: 0, to: body.count, at: offset, chunks: &chunks, into: stager)
    Self.settle(stager)
    let reported = reports.written.withLock { $0 }
    #expect(reported == reported.sorted())
    if part.writesDirectly {
      // Whole blocks only: the head up to the first boundary, then blocks after it.
      let boundary = Int64(PartFile.directAlignment)
      #expect(((reports.last ?? 0) - boundary) % Int64(Self.block) == 0)
      #expect(stager.isHolding)
    }
    stager.flush(hasher: nil)
    Self.settle(stager)
    #expect(reports.last == offset + Int64(body.count))
    #expect(!stager.isHolding)
    let file = try Self.contents(part)
    #expect(file.count == Int(offset) + body.count)
    #expect(Array(file[Int(offset)...]) == body)
    #expect(reports.failures.withLock { $0.isEmpty })
  }

  @Test func waitingBytesAreNotInTheFileUntilFlushed() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    try #require(part.writesDirectly, "direct I/O on the test's file system")
    let (stager, _, reports) = Self.make(part)
    let body = TestResource.random(size: Self.block + 100, seed: 82)
    body.withUnsafeBytes { stager.append($0, at: 0, hasher: nil) }
    Self.settle(stager)
    #expect(reports.last == Int64(Self.block))
    #expect(stager.isHolding)
    #expect(try Self.contents(part).count == Self.block)
    stager.discard()
    stager.flush(hasher: nil)
    Self.settle(stager)
    #expect(!stager.isHolding && reports.last == Int64(Self.block))
    #expect(try Self.contents(part) == Array(body[0..<Self.block]))
  }

  @Test func flushWritesEveryBlockAndTheRest() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let (stager, _, reports) = Self.make(part, blocks: 4)
    let body = TestResource.random(size: 3 * Self.block + 100, seed: 86)
    body.withUnsafeBytes { stager.append($0, at: 0, hasher: nil) }
    stager.flush(hasher: nil)
    Self.settle(stager)
    #expect(reports.last == Int64(body.count))
    #expect(try Self.contents(part) == body)
  }

  /// Chunks shorter than the way to the first boundary wait in the head block; blocks still
  /// start on the boundary.
  @Test func aHeadInSeveralChunks() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let (stager, _, reports) = Self.make(part)
    let body = TestResource.random(size: 50_000, seed: 87)
    var position = 0
    for count in [10, 20, 3_000, 46_970] {
      if !stager.reserveRoom(for: count) { Self.settle(stager) }
      body.withUnsafeBytes {
        stager.append(
          UnsafeRawBufferPointer(rebasing: $0[position..<position + count]), at: Int64(100 + position),
          hasher: nil)
      }
      position += count
      Self.settle(stager)
      if position <= 3_030, part.writesDirectly { #expect(reports.last == nil && stager.isHolding) }
    }
    stager.flush(hasher: nil)
    Self.settle(stager)
    #expect(reports.last == 50_100)
    #expect(Array(try Self.contents(part)[100...]) == body)
    // No write was refused for its alignment (that would turn direct I/O off).
    let fresh = try PartFile(path: directory.file("g.part").path)
    #expect(part.writesDirectly == fresh.writesDirectly)
  }

  @Test func bytesElsewhereFlushTheWaitingOnesFirst() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let (stager, _, reports) = Self.make(part)
    let first = TestResource.random(size: 5_000, seed: 83)
    let second = TestResource.random(size: 3_000, seed: 84)
    first.withUnsafeBytes { stager.append($0, at: 0, hasher: nil) }
    second.withUnsafeBytes { stager.append($0, at: 10_000, hasher: nil) }
    stager.flush(hasher: nil)
    Self.settle(stager)
    #expect(reports.last == 13_000)
    let file = try Self.contents(part)
    #expect(Array(file[0..<5_000]) == first)
    #expect(Array(file[10_000..<13_000]) == second)
  }

  /// While the disk holds every block, the transfer is told to pause; a free block says so.
  @Test func aTransferWhoseBlocksAllWaitIsToldToPauseAndThenToGoOn() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let (stager, io, reports) = Self.make(part, blocks: 2)
    let disk = DispatchSemaphore(value: 0)
    io.async { disk.wait() }  // a disk that does not answer yet
    let body = TestResource.random(size: 3 * Self.block, seed: 88)
    var position = 0
    var paused = false
    while position < body.count {
      let count = Self.block / 2
      guard stager.reserveRoom(for: count) else {
        paused = true
        break
      }
      body.withUnsafeBytes {
        stager.append(
          UnsafeRawBufferPointer(rebasing: $0[position..<position + count]), at: Int64(position), hasher: nil)
      }
      position += count
    }
    #expect(paused)
    #expect(position == 2 * Self.block)  // both blocks full and on their way
    #expect(reports.roomAgain.withLock { $0 } == 0)
    disk.signal()
    Self.settle(stager)
    #expect(reports.roomAgain.withLock { $0 } == 1)
    #expect(stager.reserveRoom(for: Self.block / 2))
    #expect(reports.last == Int64(2 * Self.block))
  }

  /// A block's write does not wait for the hash of the block before it: the disk keeps
  /// writing while the hasher is behind, and the blocks come back once their hashes are done.
  @Test func writesGoOnWhileTheHashesWait() async throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let hashes = DispatchQueue(label: "test.hash")
    let hasher = PrefixHasher(part: part, algorithms: [.sha256], queue: hashes)
    // Larger than `hashedOnTheLane`: hashed on the hasher's queue, not after the write.
    let blockSize = 2 * BlockStager.hashedOnTheLane
    let (stager, _, reports) = Self.make(part, blocks: 2, blockSize: blockSize)
    let body = TestResource.random(size: 2 * blockSize, seed: 89)
    hashes.suspend()  // a hasher far behind
    for start in stride(from: 0, to: body.count, by: blockSize) {
      #expect(stager.reserveRoom(for: blockSize))
      body.withUnsafeBytes {
        stager.append(
          UnsafeRawBufferPointer(rebasing: $0[start..<start + blockSize]), at: Int64(start), hasher: hasher)
      }
    }
    let settled = DispatchSemaphore(value: 0)
    stager.finish { settled.signal() }
    let wroteBoth = settled.wait(timeout: .now() + 10) == .success
    #expect(wroteBoth)
    #expect(reports.written.withLock { $0 } == [Int64(blockSize), Int64(2 * blockSize)])
    #expect(!stager.reserveRoom(for: blockSize))  // both blocks still lent to their hashes
    #expect(reports.roomAgain.withLock { $0 } == 0)
    hashes.resume()
    if !wroteBoth { Self.settle(stager) }
    #expect(await eventually(seconds: 10) { reports.roomAgain.withLock { $0 } == 1 })
    #expect(stager.reserveRoom(for: blockSize))
    hasher.advance(to: Int64(body.count))
    let digests = try hasher.finish(total: Int64(body.count), algorithms: [.sha256])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
    #expect(hasher.bytesReadBack == 0)
    #expect(try Self.contents(part) == body)
  }

  /// With the file's hasher, one transfer's bytes are hashed as they are written, whatever
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
    let (stager, _, _) = Self.make(part, onWritten: { hasher.advance(to: $0) })
    var chunks = SplitMix64(seed: 85)
    Self.append(
      body, from: offset, to: body.count, at: Int64(offset), chunks: &chunks, into: stager, hasher: hasher)
    stager.flush(hasher: hasher)
    Self.settle(stager)
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
