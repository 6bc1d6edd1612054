import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// The background hasher gives the same digests as hashing the whole file at once, however
/// the prefix is reported.
@Suite struct PrefixHasherTests {
  static func partFile(_ bytes: [UInt8], in directory: TemporaryDirectory) throws -> PartFile {
    let part = try PartFile(path: directory.file("f.part").path)
    try bytes.withUnsafeBytes { try part.write($0, at: 0) }
    return part
  }

  @Test func reportsInPiecesGiveTheWholeFilesDigests() throws {
    let directory = try TemporaryDirectory()
    let body = TestResource.random(size: 3_000_000, seed: 70)
    let part = try Self.partFile(body, in: directory)
    let hasher = PrefixHasher(part: part, algorithms: [.sha256, .md5], batch: 64 << 10)
    var end: Int64 = 0
    var generator = SplitMix64(seed: 70)
    while end < 2_500_000 {
      end = min(2_500_000, end + Int64(generator.next() % 300_000))
      hasher.advance(to: end)
      hasher.advance(to: end / 2)  // an older, smaller report changes nothing
    }
    let digests = try hasher.finish(total: Int64(body.count), algorithms: [.sha256, .sha512])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
    #expect(digests[.md5] == IntegrityTests.hex(body, .md5))
    // Not streamed: read back in `finish`.
    #expect(digests[.sha512] == IntegrityTests.hex(body, .sha512))
  }

  @Test func nothingRequestedNothingComputed() throws {
    let directory = try TemporaryDirectory()
    let part = try Self.partFile([1, 2, 3], in: directory)
    let hasher = PrefixHasher(part: part, algorithms: [])
    hasher.advance(to: 3)
    #expect(try hasher.finish(total: 3, algorithms: []).isEmpty)
  }

  @Test func aFileShorterThanItsTotalIsAnError() throws {
    let directory = try TemporaryDirectory()
    let part = try Self.partFile([1, 2, 3], in: directory)
    let hasher = PrefixHasher(part: part, algorithms: [.sha256])
    #expect(throws: HaulError.self) { try hasher.finish(total: 10, algorithms: [.sha256]) }
  }

  /// Runs `steps` on a SHA-256 hasher of a file of `size` random bytes (no read-back before
  /// `finish`), then checks the file's digest; returns how many bytes were read back.
  static func hashedInline(
    size: Int, seed: UInt64, batch: Int64 = 1 << 30, handoverGap: Int64 = 64 << 20,
    _ steps: (PrefixHasher, UnsafeRawBufferPointer) throws -> Void
  ) throws -> Int64 {
    let directory = try TemporaryDirectory()
    let body = TestResource.random(size: size, seed: seed)
    let hasher = PrefixHasher(
      part: try Self.partFile(body, in: directory), algorithms: [.sha256], batch: batch,
      handoverGap: handoverGap)
    try body.withUnsafeBytes { try steps(hasher, $0) }
    hasher.advance(to: Int64(size))
    let digests = try hasher.finish(total: Int64(size), algorithms: [.sha256])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
    return hasher.bytesReadBack
  }

  /// A SHA-256 hasher of a file of `size` random bytes whose hashes wait on a queue the test
  /// holds (suspended) until it resumes it.
  static func heldHasher(
    size: Int, seed: UInt64, batch: Int64, in directory: TemporaryDirectory
  ) throws -> (PrefixHasher, [UInt8], DispatchQueue) {
    let body = TestResource.random(size: size, seed: seed)
    let hashes = DispatchQueue(label: "test.hash")
    hashes.suspend()
    let hasher = PrefixHasher(
      part: try Self.partFile(body, in: directory), algorithms: [.sha256], batch: batch, queue: hashes)
    return (hasher, body, hashes)
  }

  /// Bytes hashed inline while being written need no second read; bytes out of order are
  /// refused and read back instead.
  @Test func inlineBytesAreNotReadAgain() throws {
    let readBack = try Self.hashedInline(size: 1_000_000, seed: 71) { hasher, raw in
      #expect(hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[100..<200]), at: 100) == nil)
      let first = try #require(hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[0..<600_000]), at: 0))
      #expect(first.wait())
    }
    #expect(readBack == 400_000)
  }

  /// `whenDone` calls back once the hash has run: later for a queued one, at once for one
  /// already done, and after running it for a deferred one; each time with whether the bytes
  /// were hashed.
  @Test func whenDoneCallsBackOnceTheHashHasRun() throws {
    let directory = try TemporaryDirectory()
    let (hasher, body, hashes) = try Self.heldHasher(size: 1_000_000, seed: 74, batch: 1 << 30, in: directory)
    let calls = Locked<[String]>([])
    try body.withUnsafeBytes { raw in
      let queued = try #require(hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[0..<600_000]), at: 0))
      let called = DispatchSemaphore(value: 0)
      queued.whenDone { hashed in
        calls.withLock { $0.append("queued \(hashed)") }
        called.signal()
      }
      usleep(20_000)
      #expect(calls.withLock { $0 }.isEmpty)
      hashes.resume()
      #expect(called.wait(timeout: .now() + 10) == .success)
      #expect(calls.withLock { $0 } == ["queued true"])

      let deferred = try #require(
        hasher.beginInline(
          UnsafeRawBufferPointer(rebasing: raw[600_000..<700_000]), at: 600_000, deferred: true))
      deferred.whenDone { hashed in calls.withLock { $0.append("deferred \(hashed)") } }
      #expect(calls.withLock { $0 } == ["queued true", "deferred true"])

      let last = try #require(
        hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[700_000...]), at: 700_000))
      hashes.sync {}  // it has run
      last.whenDone { hashed in calls.withLock { $0.append("done \(hashed)") } }
      #expect(calls.withLock { $0 } == ["queued true", "deferred true", "done true"])
    }
    hasher.advance(to: Int64(body.count))
    let digests = try hasher.finish(total: Int64(body.count), algorithms: [.sha256])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
    #expect(hasher.bytesReadBack == 0)
  }

  /// Bytes reported written while an inline hash is pending (another connection's, right
  /// after it) are read back once that hash is done, not only at `finish`: a block's write is
  /// reported before its hash ends.
  @Test func bytesReportedDuringAnInlineHashAreReadBackAfterIt() async throws {
    let directory = try TemporaryDirectory()
    let (hasher, body, hashes) = try Self.heldHasher(
      size: 1_500_000, seed: 75, batch: 64 << 10, in: directory)
    try body.withUnsafeBytes { raw in
      let first = try #require(hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[0..<500_000]), at: 0))
      hasher.advance(to: 1_500_000)
      hashes.resume()
      #expect(first.wait())
    }
    #expect(await eventually(seconds: 10) { hasher.bytesReadBack >= 1_000_000 })
    let digests = try hasher.finish(total: Int64(body.count), algorithms: [.sha256])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
    #expect(hasher.bytesReadBack == 1_000_000)
  }

  /// A deferred inline hash runs in `wait()`, still in the order the hashes began; none is
  /// read back.
  @Test func deferredInlineHashesRunAtWaitInOrder() throws {
    let readBack = try Self.hashedInline(size: 900_000, seed: 73) { hasher, raw in
      let first = try #require(
        hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[0..<300_000]), at: 0, deferred: true))
      // Begun while the first waits for its `wait()`: deferred too, and hashed after it.
      let second = try #require(
        hasher.beginInline(
          UnsafeRawBufferPointer(rebasing: raw[300_000..<600_000]), at: 300_000, deferred: true))
      #expect(first.wait())
      #expect(second.wait())
      let third = try #require(
        hasher.beginInline(
          UnsafeRawBufferPointer(rebasing: raw[600_000..<900_000]), at: 600_000, deferred: true))
      #expect(third.wait())
    }
    #expect(readBack == 0)
  }

  /// A hash that is not deferred queues the deferred ones begun before it, so it never passes
  /// them, whichever is waited for first.
  @Test func aQueuedHashNeverPassesADeferredOne() throws {
    let readBack = try Self.hashedInline(size: 600_000, seed: 74) { hasher, raw in
      let first = try #require(
        hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[0..<1_000]), at: 0, deferred: true))
      let second = try #require(
        hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[1_000..<600_000]), at: 1_000))
      #expect(second.wait())
      #expect(first.wait())
    }
    #expect(readBack == 0)
  }

  /// While written bytes are read back, a block that continues them is hashed inline once the
  /// read-back reaches it, and so are the blocks that follow it; none is read again (a
  /// connection that resumes after bytes others wrote, as after automatic mode steps back,
  /// would otherwise be chased by the read-back to the end of the download).
  @Test func aBlockAfterBytesBeingReadBackTakesOverInline() throws {
    let written = 32 << 20
    let readBack = try Self.hashedInline(size: written + 1_000_000, seed: 75, batch: 1 << 20) { hasher, raw in
      hasher.advance(to: Int64(written))  // a read-back of 32 MiB begins
      let first = try #require(
        hasher.beginInline(
          UnsafeRawBufferPointer(rebasing: raw[written..<(written + 600_000)]), at: Int64(written)))
      let second = try #require(
        hasher.beginInline(
          UnsafeRawBufferPointer(rebasing: raw[(written + 600_000)...]), at: Int64(written + 600_000)))
      // Only blocks that continue them.
      #expect(hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[0..<10]), at: 5) == nil)
      #expect(first.wait() && second.wait())
    }
    #expect(readBack == Int64(written))
  }

  /// Not from far behind: a resume after most of a file would make every write wait for the
  /// read-back of all of it. The block is read back later with the rest.
  @Test func aBlockFarAheadOfTheReadBackDoesNotTakeOver() throws {
    let written = 32 << 20
    let readBack = try Self.hashedInline(
      size: written + 1_000, seed: 77, batch: 1 << 20, handoverGap: 16 << 20
    ) {
      hasher, raw in
      hasher.advance(to: Int64(written))
      #expect(
        hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[written...]), at: Int64(written)) == nil)
    }
    #expect(readBack == Int64(written + 1_000))
  }

  /// A block that would take over, but whose preceding bytes are not all written when its turn
  /// comes, is not hashed: it is read back with them.
  @Test func aBlockAfterUnwrittenBytesIsReadBack() throws {
    let written = 32 << 20
    let size = written + 1_000_000
    let readBack = try Self.hashedInline(size: size, seed: 76, batch: 1 << 20) { hasher, raw in
      hasher.advance(to: Int64(written))
      let apart = written + 1_000
      let block = try #require(
        hasher.beginInline(UnsafeRawBufferPointer(rebasing: raw[apart...]), at: Int64(apart)))
      #expect(block.wait() == false)
    }
    #expect(readBack == Int64(size))
  }

  /// Inline bytes whose write failed are forgotten: the digests come from the file.
  @Test func forgottenInlineBytesAreHashedFromTheFile() throws {
    let directory = try TemporaryDirectory()
    let body = TestResource.random(size: 300_000, seed: 72)
    let part = try Self.partFile(body, in: directory)
    let hasher = PrefixHasher(part: part, algorithms: [.sha256])
    let other = [UInt8](repeating: 0xAB, count: 100_000)
    let inline = other.withUnsafeBytes { hasher.beginInline($0, at: 0)?.wait() }
    #expect(inline == true)
    hasher.forgetInlineBytes()
    let digests = try hasher.finish(total: Int64(body.count), algorithms: [.sha256])
    #expect(digests[.sha256] == IntegrityTests.hex(body))
  }
}
