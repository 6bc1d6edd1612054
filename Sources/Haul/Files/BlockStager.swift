/// Collects one connection's bytes, which arrive in order, into aligned blocks that
/// `PartFile.writeDirect` writes past the page cache. The bytes before the first block boundary
/// and a last partial block (`flush`) go through the page cache. Where the file system has no
/// direct I/O, bytes are written as they come, without a copy.
///
/// Received is not written: the engine counts bytes as held only up to `writtenThrough`, so a
/// checkpoint never claims bytes still waiting here.
///
/// Given the file's hasher, bytes that continue its hashed prefix are hashed on its thread
/// while they are written: no second read. A full block's hash runs on while the next block
/// fills (a second block, allocated when first needed), so receiving does not wait for hashing.
///
/// Not thread-safe: one connection uses it, one callback at a time.
final class BlockStager {
  private let file: PartFile
  /// The block being filled, and the other one, whose hash may still be running.
  private var block: UnsafeMutableRawBufferPointer
  private var spare: UnsafeMutableRawBufferPointer?
  private var spareHash: PrefixHasher.InlineHash?
  /// The file offset of `block[0]` (aligned) and how many bytes wait there.
  private var blockStart: Int64 = 0
  private var filled = 0
  /// The file holds this connection's bytes, in order, up to here.
  private(set) var writtenThrough: Int64 = 0
  /// When the oldest waiting byte arrived (`Monotonic`), so slow connections flush in time.
  private(set) var waitingSince: UInt64 = 0

  /// - Parameter blockSize: bytes per direct write, rounded up to the alignment.
  init(file: PartFile, blockSize: Int) {
    let alignment = PartFile.directAlignment
    let size = max(alignment, (blockSize + alignment - 1) / alignment * alignment)
    self.file = file
    self.block = .allocate(byteCount: size, alignment: alignment)
  }

  deinit {
    // The hasher may still read the spare block.
    _ = spareHash?.wait()
    block.deallocate()
    spare?.deallocate()
  }

  var path: String { file.path }

  /// Whether received bytes wait to be written.
  var isHolding: Bool { filled > 0 }

  /// Where the next bytes are expected: the end of those received so far.
  var receivedThrough: Int64 { filled > 0 ? blockStart + Int64(filled) : writtenThrough }

  /// Takes bytes that belong at `offset` (right after the previous ones; elsewhere, the waiting
  /// bytes are flushed first). Returns how far the file now holds this connection's bytes.
  @discardableResult
  func append(
    _ bytes: UnsafeRawBufferPointer, at offset: Int64, hasher: PrefixHasher? = nil
  ) throws(SystemError) -> Int64 {
    if filled > 0, offset != receivedThrough { try flush(hasher: hasher) }
    var rest = bytes
    var position = offset
    if filled == 0 {
      writtenThrough = position
      guard file.writesDirectly else {
        _ = try put(rest, at: position, direct: false, hasher: hasher)?.wait()
        writtenThrough = position + Int64(rest.count)
        return writtenThrough
      }
      // Up to the first block boundary through the page cache.
      let alignment = Int64(PartFile.directAlignment)
      let head = Int(min(Int64(rest.count), (alignment - position % alignment) % alignment))
      if head > 0 {
        // libcurl's memory: it must be hashed before this call returns.
        _ = try put(
          UnsafeRawBufferPointer(rebasing: rest[0..<head]), at: position, direct: false, hasher: hasher)?
          .wait()
        rest = UnsafeRawBufferPointer(rebasing: rest[head...])
        position += Int64(head)
        writtenThrough = position
      }
      blockStart = position
    }
    if filled == 0, !rest.isEmpty { waitingSince = Monotonic.now() }
    while !rest.isEmpty {
      let count = min(rest.count, block.count - filled)
      UnsafeMutableRawBufferPointer(rebasing: block[filled..<filled + count])
        .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<count]))
      filled += count
      rest = UnsafeRawBufferPointer(rebasing: rest[count...])
      if filled == block.count {
        let hash = try put(UnsafeRawBufferPointer(block), at: blockStart, direct: true, hasher: hasher)
        if let hash { swapBlocks(keepingHash: hash) }
        blockStart += Int64(filled)
        filled = 0
        writtenThrough = blockStart
        if !rest.isEmpty { waitingSince = Monotonic.now() }
      }
    }
    return writtenThrough
  }

  /// Writes the bytes still waiting (whole aligned pages directly, the rest through the page
  /// cache). Returns how far the file now holds this connection's bytes.
  @discardableResult
  func flush(hasher: PrefixHasher? = nil) throws(SystemError) -> Int64 {
    guard filled > 0 else { return writtenThrough }
    let aligned = filled / PartFile.directAlignment * PartFile.directAlignment
    if aligned > 0 {
      _ = try put(
        UnsafeRawBufferPointer(rebasing: block[0..<aligned]), at: blockStart, direct: true, hasher: hasher)?
        .wait()
    }
    if aligned < filled {
      _ = try put(
        UnsafeRawBufferPointer(rebasing: block[aligned..<filled]), at: blockStart + Int64(aligned),
        direct: false, hasher: hasher)?.wait()
    }
    blockStart += Int64(filled)
    filled = 0
    writtenThrough = blockStart
    return writtenThrough
  }

  /// Writes `bytes` at `offset`, hashing them at the same time when they continue the hasher's
  /// prefix. Returns that hash, still running: wait for it before touching `bytes` again.
  private func put(
    _ bytes: UnsafeRawBufferPointer, at offset: Int64, direct: Bool, hasher: PrefixHasher?
  ) throws(SystemError) -> PrefixHasher.InlineHash? {
    let pending = hasher?.beginInline(bytes, at: offset)
    do {
      if direct { try file.writeDirect(bytes, at: offset) } else { try file.write(bytes, at: offset) }
    } catch {
      if pending?.wait() == true { hasher?.forgetInlineBytes() }
      throw error
    }
    return pending
  }

  /// The full block was written and its hash is running: fill the other block meanwhile,
  /// once its own hash is done.
  private func swapBlocks(keepingHash hash: PrefixHasher.InlineHash) {
    _ = spareHash?.wait()
    let next = spare ?? .allocate(byteCount: block.count, alignment: PartFile.directAlignment)
    spare = block
    spareHash = hash
    block = next
  }

  /// Forgets the bytes still waiting (their range is fetched again, or was replaced).
  func discard() { filled = 0 }
}

@available(*, unavailable)
extension BlockStager: Sendable {}
