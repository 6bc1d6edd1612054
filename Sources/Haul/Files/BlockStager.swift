import CFileSystem

/// Collects one transfer's bytes, which arrive in order, into aligned blocks and hands each full
/// block to the download's I/O lane (`DownloadIO`), which writes it past the page cache
/// (`PartFile.writeDirect`) while the next block fills. The bytes before the first block
/// boundary and a last partial block (`flush`) go through the page cache.
///
/// Received is not written: `written` is called, on the lane, with how far the file holds this
/// transfer's bytes, so a checkpoint never claims bytes still waiting here or on their way.
///
/// Given the file's hasher, a block whose bytes continue the hashed prefix is hashed on the
/// hasher's thread while it is written: no second read.
///
/// A transfer has a few blocks (allocated when first needed). When all are waiting for the
/// disk, `reserveRoom` says no and the transfer pauses; `roomAgain` is called once a block is
/// free. Threads: `reserveRoom`, `append`, `flush`, `discard` and `finish` on the event thread,
/// one call at a time; the lane returns blocks behind the lock.
final class BlockStager: Sendable {
  /// What the lane reports.
  struct Callbacks: Sendable {
    /// The file holds this transfer's bytes up to the offset.
    var written: @Sendable (Int64) -> Void
    /// A write failed; nothing more is written.
    var failed: @Sendable (SystemError) -> Void
    /// A block is free again after `reserveRoom` said no.
    var roomAgain: @Sendable () -> Void
  }

  /// Blocks up to this size are hashed on the lane after their write (`beginInline`'s
  /// `deferred`): the hash takes less than handing it to the hasher's thread and back. Larger
  /// ones are hashed on that thread while they are written.
  static let hashedOnTheLane = 256 * 1024

  private let file: PartFile
  private let io: DownloadIO
  private let blockSize: Int
  private let maxBlocks: Int
  private let callbacks: Callbacks
  private let state = Locked(Blocks())

  private struct Blocks {
    /// The block being filled: its file offset, how many bytes it may take (up to the next
    /// aligned boundary when it starts unaligned) and how many it holds.
    var current: UnsafeMutableRawBufferPointer?
    var start: Int64 = 0
    var limit = 0
    var filled = 0
    var free: [UnsafeMutableRawBufferPointer] = []
    var allocated = 0
    /// Where the next bytes are expected (after the last ones taken), once there were any.
    var next: Int64?
    var waitingForRoom = false
    var failed = false
    /// When the oldest waiting byte arrived (`Monotonic`), so slow connections flush in time.
    var waitingSince: UInt64 = 0
  }

  /// A block handed to the lane.
  private struct Job {
    nonisolated(unsafe) var block: UnsafeMutableRawBufferPointer
    var start: Int64
    var count: Int
  }

  /// - Parameters:
  ///   - blockSize: bytes per direct write, rounded up to the alignment.
  ///   - blocks: how many blocks the transfer may have (at least 2).
  init(file: PartFile, io: DownloadIO, blockSize: Int, blocks: Int = 2, callbacks: Callbacks) {
    let alignment = PartFile.directAlignment
    self.file = file
    self.io = io
    self.blockSize = max(alignment, (blockSize + alignment - 1) / alignment * alignment)
    self.maxBlocks = max(2, blocks)
    self.callbacks = callbacks
  }

  deinit {
    // The lane's jobs and the hashes' callbacks hold the stager, so every block is back by now.
    state.withLock { blocks in
      blocks.current?.deallocate()
      for block in blocks.free { block.deallocate() }
    }
  }

  var path: String { file.path }

  /// Whether received bytes wait in the current block.
  var isHolding: Bool { state.withLock { $0.filled > 0 } }

  var waitingSince: UInt64 { state.withLock { $0.waitingSince } }

  /// Whether `count` more bytes fit without waiting for the disk. When not, `roomAgain` is
  /// called once a block is free, and the caller should pause its transfer.
  func reserveRoom(for count: Int) -> Bool {
    state.withLock { blocks in
      let room = blocks.current.map { _ in blocks.limit - blocks.filled } ?? 0
      guard count > room else { return true }
      // Past the current block the rest starts aligned and needs one block per `blockSize`;
      // a first piece at an unaligned (or unknown) offset may need one more.
      var needed = (count - room + blockSize - 1) / blockSize
      let alignment = Int64(PartFile.directAlignment)
      if blocks.current == nil, blocks.next.map({ $0 % alignment != 0 }) ?? true { needed += 1 }
      let available = blocks.free.count + (maxBlocks - blocks.allocated)
      guard needed > available, needed <= maxBlocks else { return true }
      blocks.waitingForRoom = true
      return false
    }
  }

  /// Takes bytes that belong at `offset` (right after the previous ones; elsewhere, the waiting
  /// bytes are handed over first). `hasher`: the file's, when these bytes may be hashed inline.
  func append(_ bytes: UnsafeRawBufferPointer, at offset: Int64, hasher: PrefixHasher?) {
    var jobs: [Job] = []
    state.withLock { blocks in
      if blocks.filled > 0, offset != blocks.start + Int64(blocks.filled), let job = take(&blocks) {
        jobs.append(job)
      }
      var rest = bytes
      var position = offset
      while !rest.isEmpty {
        if blocks.current == nil || blocks.filled == 0 { open(&blocks, at: position) }
        guard let block = blocks.current else { break }
        let count = min(rest.count, blocks.limit - blocks.filled)
        // Past the cache: these bytes are next read by the disk (and the hasher), not by us.
        if let to = block.baseAddress, let from = rest.baseAddress {
          haul_copy_to_block(to + blocks.filled, from, count)
        }
        blocks.filled += count
        position += Int64(count)
        rest = UnsafeRawBufferPointer(rebasing: rest[count...])
        if blocks.filled == blocks.limit, let job = take(&blocks) { jobs.append(job) }
      }
    }
    for job in jobs { submit(job, hasher: hasher) }
  }

  /// Hands the bytes still waiting to the lane (whole aligned pages directly, the rest
  /// through the page cache).
  func flush(hasher: PrefixHasher?) {
    guard let job = state.withLock({ take(&$0) }) else { return }
    submit(job, hasher: hasher)
  }

  /// Forgets the bytes still waiting (their range is fetched again, or was replaced).
  func discard() {
    state.withLock { blocks in
      blocks.filled = 0
    }
  }

  /// Runs `then` on the lane after every write this transfer handed over.
  func finish(then: @escaping @Sendable () -> Void) {
    io.async { [self] in
      withExtendedLifetime(self) { then() }
    }
  }

  /// Starts a block at `position`: one that starts unaligned takes bytes up to the next
  /// boundary only (they go through the page cache), so the blocks after it are aligned.
  private func open(_ blocks: inout Blocks, at position: Int64) {
    if blocks.current == nil {
      if let block = blocks.free.popLast() {
        blocks.current = block
      } else {
        // Beyond `maxBlocks` only for a chunk larger than all of them (`reserveRoom`).
        blocks.current = .allocate(byteCount: blockSize, alignment: PartFile.directAlignment)
        blocks.allocated += 1
      }
    }
    let alignment = Int64(PartFile.directAlignment)
    let head = Int((alignment - position % alignment) % alignment)
    blocks.start = position
    blocks.limit = head > 0 && file.writesDirectly ? head : blockSize
    blocks.filled = 0
    blocks.waitingSince = Monotonic.now()
  }

  /// The current block as a job, if it holds bytes; the next bytes need a new block.
  private func take(_ blocks: inout Blocks) -> Job? {
    guard let block = blocks.current, blocks.filled > 0 else { return nil }
    let job = Job(block: block, start: blocks.start, count: blocks.filled)
    blocks.next = blocks.start + Int64(blocks.filled)
    blocks.current = nil
    blocks.filled = 0
    return job
  }

  /// Hashes (when the bytes continue the hashed prefix) and writes `job` on the lane; the
  /// block is free again once both are done. The lane goes on to the next write meanwhile, so
  /// a hash that falls behind (a busy CPU, a hand-over waiting for a read-back) does not leave
  /// the disk idle; it holds only its block.
  private func submit(_ job: Job, hasher: PrefixHasher?) {
    let bytes = UnsafeRawBufferPointer(rebasing: job.block[0..<job.count])
    // In order, on the event thread: inline hashes must begin in file order. A small block
    // (a small file's, a slow connection's) is hashed on the lane, after its write.
    let hash = hasher?.beginInline(bytes, at: job.start, deferred: job.count <= Self.hashedOnTheLane)
    io.async { [self] in
      var failure: SystemError?
      if !state.withLock({ $0.failed }) {
        do throws(SystemError) { try write(job) } catch { failure = error }
      }
      if let failure {
        state.withLock { $0.failed = true }
        callbacks.failed(failure)
      } else if !state.withLock({ $0.failed }) {
        callbacks.written(job.start + Int64(job.count))
      }
      let writeFailed = failure != nil
      let release: @Sendable (Bool) -> Void = { [self] hashed in
        if writeFailed, hashed { hasher?.forgetInlineBytes() }
        let wake: Bool = state.withLock { blocks in
          blocks.free.append(job.block)
          defer { blocks.waitingForRoom = false }
          return blocks.waitingForRoom
        }
        if wake { callbacks.roomAgain() }
      }
      if let hash { hash.whenDone(release) } else { release(false) }
    }
  }

  /// On the lane: an aligned start's whole pages go directly, the rest through the page cache.
  private func write(_ job: Job) throws(SystemError) {
    let alignment = PartFile.directAlignment
    let aligned = job.start % Int64(alignment) == 0 ? job.count / alignment * alignment : 0
    if aligned > 0 {
      try file.writeDirect(UnsafeRawBufferPointer(rebasing: job.block[0..<aligned]), at: job.start)
    }
    if aligned < job.count {
      try file.write(
        UnsafeRawBufferPointer(rebasing: job.block[aligned..<job.count]), at: job.start + Int64(aligned))
    }
  }
}
