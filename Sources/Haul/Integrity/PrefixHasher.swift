import Dispatch
import FoundationEssentials

/// Digests of the whole file, computed front to back on a thread of their own while the
/// download goes on. Bytes that continue the hashed prefix are hashed from memory while they
/// are written (`beginInline`, one connection's usual case: no second read); otherwise the
/// engine reports how far the file is written without a gap and the hasher reads those bytes
/// back, until a block that continues them takes over inline. `finish` hashes whatever is left.
///
/// Thread-safety: `progress` sits behind its lock; the digests and the read buffer are only
/// touched on `queue` (serial), which is why the class may be shared.
final class PrefixHasher: @unchecked Sendable {
  private let part: PartFile
  private let queue: DispatchQueue
  /// Hashing waits until this many new bytes are available, so it runs in large reads.
  private let batch: Int64
  /// The most bytes a block takes over from a read-back behind (`beginInline`): the block is
  /// lent until that read-back is done, and its transfer pauses once all its blocks are.
  private let handoverGap: Int64

  private struct Progress {
    /// The end of the gap-free written prefix, as last reported.
    var available: Int64 = 0
    var hashed: Int64 = 0
    /// Inline hashes queued and not yet done, and where the last one ends: the next inline
    /// bytes must start there.
    var inlinePending = 0
    /// Deferred inline hashes not yet queued or run, in the order begun.
    var deferred: [InlineHash] = []
    var inlineEnd: Int64 = 0
    var workerQueued = false
    /// Where the read-back stops, because an inline hash takes over there (`beginInline`).
    var readBackStop: Int64?
    var cancelled = false
    var failure: HaulError?
    /// Bytes read back from the file to hash them (not hashed inline).
    var readBack: Int64 = 0
  }
  private let progress = Locked(Progress())

  /// How many bytes were read back from the file to hash them, `finish` included.
  var bytesReadBack: Int64 { progress.withLock { $0.readBack } }
  /// Only on `queue`.
  private var digests: [Checksum.Algorithm: MessageDigest] = [:]
  /// Where read-backs land (two aligned halves, for direct reads); allocated at the first one.
  private var buffer: UnsafeMutableRawBufferPointer?
  private static let readBufferSize = 1 << 20

  /// - Parameters:
  ///   - algorithms: the digests to stream; others are computed by reading the file again in
  ///     `finish`.
  ///   - queue: where hashes run (serial); tests pass one they can hold.
  init(
    part: PartFile, algorithms: Set<Checksum.Algorithm>, batch: Int64 = 1 << 20,
    handoverGap: Int64 = 64 << 20,
    queue: DispatchQueue = DispatchQueue(label: "haul.hash", qos: .utility)
  ) {
    self.part = part
    self.queue = queue
    self.batch = max(1, batch)
    self.handoverGap = handoverGap
    for algorithm in algorithms {
      digests[algorithm] = try? MessageDigest(algorithm.digest)
    }
  }

  deinit { buffer?.deallocate() }

  /// The prefix `[0, end)` is written and final; hash it soon. Cheap: called for every chunk.
  func advance(to end: Int64) {
    let start = progress.withLock { progress -> Bool in
      guard end > progress.available else { return false }
      progress.available = end
      return claimReadBack(&progress)
    }
    if start { queue.async { self.hashAvailable() } }
  }

  /// Whether a read-back is to start now (the caller queues `hashAvailable`): enough written
  /// bytes wait, and none is queued. Queued inline hashes are keeping up; a read-back starts
  /// once they are done (the last one's end asks again).
  private func claimReadBack(_ progress: inout Progress) -> Bool {
    guard !progress.workerQueued, !progress.cancelled, progress.inlinePending == 0,
      progress.available - progress.hashed >= batch
    else { return false }
    progress.workerQueued = true
    return true
  }

  /// Stops hashing for good (the data is being replaced).
  func cancel() { progress.withLock { $0.cancelled = true } }

  /// Starts hashing `bytes`, which the caller writes at `offset` meanwhile, if they continue
  /// the hashed prefix (after reading back a small gap; else nil: they are read back once
  /// reported). Hashes run in the order they were begun. The caller must call `wait()` on the
  /// result before it touches or frees the bytes.
  ///
  /// - Parameter deferred: hash in `wait()`, on the caller's thread (through the queue, so in
  ///   order), instead of on the queue's own thread at once: for a small block the hand-over
  ///   costs more than the hash. A later hash that is not deferred queues it first.
  func beginInline(_ bytes: UnsafeRawBufferPointer, at offset: Int64, deferred: Bool = false) -> InlineHash? {
    let count = Int64(bytes.count)
    let hashed = Locked(false)
    // Lent until `wait()` returns, which the caller must reach before reusing the memory.
    nonisolated(unsafe) let lent = bytes
    /// `readFrom`: where the bytes before the block begin that are read back first (nil: the
    /// block takes over from a read-back, which stopped at it or earlier: from wherever
    /// hashing stands, if the bytes up to the block are written by now).
    let work: @Sendable (_ readFrom: Int64?) -> Void = { [self] readFrom in
      defer {
        // Written bytes reported while inline hashes were pending started no read-back
        // (`advance`): start it now if they are far enough ahead, as `advance` would have.
        let readBack = progress.withLock { progress in
          progress.inlinePending -= 1
          if progress.readBackStop == offset { progress.readBackStop = nil }
          return claimReadBack(&progress)
        }
        if readBack { queue.async { self.hashAvailable() } }
      }
      // Skipped if the data was replaced or forgotten meanwhile, or the bytes before it are not
      // all there: the block is then read back once reported.
      let from = progress.withLock { progress -> Int64? in
        guard !progress.cancelled, progress.failure == nil else { return nil }
        guard let readFrom else {
          return progress.hashed <= offset && progress.available >= offset ? progress.hashed : nil
        }
        return progress.hashed == readFrom ? readFrom : nil
      }
      guard let from else { return }
      do throws(HaulError) {
        try hash(from: from, to: offset, into: Array(digests.values))
      } catch {
        progress.withLock { if !$0.cancelled { $0.failure = error } }
        return
      }
      for digest in digests.values { digest.update(lent) }
      progress.withLock { $0.hashed = offset + count }
      hashed.withLock { $0 = true }
    }
    let reserved: (pending: InlineHash, overtaken: [InlineHash])? = progress.withLock { progress in
      guard !progress.cancelled, progress.failure == nil else { return nil }
      let readFrom: Int64?
      if progress.workerQueued, progress.readBackStop == nil {
        // Bytes are being read back: a block that continues what is being written takes over,
        // hashed once the read-back reaches it (the caller may wait for that). Without this, a
        // writer as fast as the read-back is never caught up with, and every byte after a gap
        // is read back, many of them after the download ends. Not from far behind (a resume
        // after most of a file): the transfer would wait for all of it.
        guard progress.inlinePending == 0, offset >= progress.available,
          offset - progress.hashed <= handoverGap
        else { return nil }
        progress.readBackStop = offset
        readFrom = nil
      } else {
        // Once a block took over (`readBackStop`), its pending hash makes `inlineEnd` the start
        // the next blocks must continue.
        let expected = progress.inlinePending > 0 ? progress.inlineEnd : progress.hashed
        guard expected <= offset else { return nil }
        // A gap is read back first if it is small, written and nothing is queued before it;
        // a large one is left to the read-back, after which inline hashing takes over.
        let gap = offset - expected
        guard gap == 0 || (progress.inlinePending == 0 && offset <= progress.available && gap <= batch)
        else { return nil }
        readFrom = expected
      }
      progress.inlinePending += 1
      progress.inlineEnd = offset + count
      let pending = InlineHash(hashed: hashed, queue: queue, work: { work(readFrom) })
      if deferred {
        // Those `wait()` ran already need no queueing: a long run of small blocks keeps few.
        progress.deferred.removeAll { !$0.isDeferred }
        progress.deferred.append(pending)
        return (pending, [])
      }
      defer { progress.deferred = [] }
      return (pending, progress.deferred)
    }
    guard let (pending, overtaken) = reserved else { return nil }
    // In the order begun: deferred hashes not yet waited for go first.
    for earlier in overtaken { earlier.queueNow() }
    if !deferred { pending.queueNow() }
    return pending
  }

  /// A hash started by `beginInline`.
  final class InlineHash: Sendable {
    private enum Run {
      /// Deferred: `wait()` or `whenDone` runs it, unless a later hash queues it first.
      case deferred(@Sendable () -> Void)
      /// On the hasher's queue; `then` is called once it has run.
      case queued(then: (@Sendable (Bool) -> Void)?)
      /// Run, or taken to be run by `whenDone`.
      case done
    }
    private let run: Locked<Run>
    private let hashed: Locked<Bool>
    private let queue: DispatchQueue

    fileprivate init(hashed: Locked<Bool>, queue: DispatchQueue, work: @escaping @Sendable () -> Void) {
      self.hashed = hashed
      self.queue = queue
      self.run = Locked(.deferred(work))
    }

    fileprivate var isDeferred: Bool {
      run.withLock { if case .deferred = $0 { true } else { false } }
    }

    /// Queues the hash on the hasher's queue, if neither queued nor taken by `whenDone` yet.
    fileprivate func queueNow() {
      let work: (@Sendable () -> Void)? = run.withLock { run in
        guard case .deferred(let work) = run else { return nil }
        run = .queued(then: nil)
        return work
      }
      guard let work else { return }
      queue.async { [self] in
        work()
        let then: (@Sendable (Bool) -> Void)? = run.withLock { run in
          defer { run = .done }
          guard case .queued(let then) = run else { return nil }
          return then
        }
        then?(hashed.withLock { $0 })
      }
    }

    /// Waits for the hash (or, deferred, runs it: `whenDone`); true if the bytes were hashed.
    /// Once only, and not with `whenDone`.
    func wait() -> Bool {
      let done = DispatchSemaphore(value: 0)
      whenDone { _ in done.signal() }
      done.wait()
      return hashed.withLock { $0 }
    }

    /// Calls `body` with whether the bytes were hashed once the hash has run: at once if it
    /// has, on the hasher's thread when it runs there, and here after running it if deferred
    /// (through the queue, so in order). Once only, and not with `wait()`.
    func whenDone(_ body: @escaping @Sendable (Bool) -> Void) {
      enum Next {
        case run(@Sendable () -> Void)
        case later
        case now
      }
      let next: Next = run.withLock { run in
        switch run {
        case .deferred(let work):
          run = .done
          return .run(work)
        case .queued(then: nil):
          run = .queued(then: body)
          return .later
        case .queued, .done:
          return .now
        }
      }
      switch next {
      case .later:
        return
      case .run(let work):
        queue.sync(execute: work)
        fallthrough
      case .now:
        body(hashed.withLock { $0 })
      }
    }
  }

  /// Bytes hashed inline did not reach the file (a failed write): hash the file again from its
  /// start, by reading it back, so the digests describe what the file holds.
  func forgetInlineBytes() {
    queue.async { [self] in
      for algorithm in digests.keys { digests[algorithm] = try? MessageDigest(algorithm.digest) }
      progress.withLock { $0.hashed = 0 }
    }
  }

  /// The digests of `[0, total)` for `algorithms` (and any streamed ones), hashing what is left and
  /// reading the file once more for any algorithm that was not streamed.
  func finish(total: Int64, algorithms: Set<Checksum.Algorithm>) throws(HaulError)
    -> [Checksum.Algorithm: String]
  {
    let result: Result<[Checksum.Algorithm: String], HaulError> = queue.sync {
      do throws(HaulError) {
        let (hashed, failure) = progress.withLock { ($0.hashed, $0.failure) }
        if let failure { throw failure }
        var streamed = digests
        if hashed > total {  // cannot happen with a gap-free prefix; start over rather than guess
          streamed = [:]
        } else {
          try hash(from: hashed, to: total, into: Array(streamed.values))
        }
        var fresh: [Checksum.Algorithm: MessageDigest] = [:]
        for algorithm in algorithms where streamed[algorithm] == nil {
          fresh[algorithm] = try MessageDigest(algorithm.digest)
        }
        try hash(from: 0, to: total, into: Array(fresh.values))
        // The digests are final now: no later report may feed them again.
        progress.withLock {
          $0.hashed = total
          $0.cancelled = true
        }
        var hex: [Checksum.Algorithm: String] = [:]
        for (algorithm, digest) in streamed.merging(fresh, uniquingKeysWith: { _, new in new }) {
          hex[algorithm] = MessageDigest.hex(digest.finish())
        }
        return .success(hex)
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// On `queue`: hashes the reported prefix until it is all hashed.
  private func hashAvailable() {
    while true {
      let span = progress.withLock { progress -> (Int64, Int64)? in
        let end = min(progress.available, progress.readBackStop ?? .max)
        guard !progress.cancelled, progress.failure == nil, progress.hashed < end else {
          progress.workerQueued = false
          return nil
        }
        return (progress.hashed, end)
      }
      guard let (from, to) = span else { return }
      do throws(HaulError) {
        try hash(from: from, to: to, into: Array(digests.values))
        progress.withLock { $0.hashed = to }
      } catch {
        progress.withLock { progress in
          if !progress.cancelled { progress.failure = error }
        }
      }
    }
  }

  /// On `queue`: reads `[from, to)` of the file and feeds it to `digests`.
  private func hash(from: Int64, to: Int64, into digests: [MessageDigest]) throws(HaulError) {
    guard from < to, !digests.isEmpty else { return }
    if buffer == nil {
      buffer = .allocate(byteCount: Self.readBufferSize, alignment: PartFile.directAlignment)
    }
    guard let buffer else { return }
    let end: Int64
    do {
      end = try part.read(from: from, to: to, using: buffer) { chunk in
        for digest in digests { digest.update(chunk) }
      }
    } catch {
      throw HaulError(.fileSystem, FileErrorText.describe(error, path: part.path), underlying: error)
    }
    progress.withLock { $0.readBack += end - from }
    guard end == to else {
      throw HaulError(.fileSystem, "\(part.path) is shorter than the \(to) bytes it should hold")
    }
  }
}
