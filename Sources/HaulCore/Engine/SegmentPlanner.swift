/// Which bytes of a resource are held, which are being fetched by which connection, and which
/// range a free connection should take next. Pure bookkeeping, no I/O: the engine asks it
/// questions under its lock and acts on the answers outside.
///
/// A free connection takes the largest range nobody holds or fetches; when there is none, it
/// takes the second half of the largest range still being fetched (work stealing), so that
/// all connections finish together. Halves are never smaller than `minimumSplit`, unless the
/// caller says a smaller one is worth a request (`claim(smallestHalf:)`).
package struct SegmentPlanner: Sendable, Equatable {
  /// One connection's share: it writes `[cursor, end)` in order; `[start, cursor)` is in the
  /// file and `[cursor, reserved)` is received but still on its way there (never stolen).
  package struct Segment: Sendable, Equatable {
    package let id: Int
    package let start: Int64
    package var cursor: Int64
    package var reserved: Int64
    package var end: Int64
    /// Awaiting a check of its response's `Content-Digest`: never split (the digest covers
    /// the whole response) and not part of the verified prefix until checked.
    package var pinned = false
    package var remaining: Int64 { end - reserved }
  }

  package let total: Int64
  package let minimumSplit: Int64
  /// Written bytes not in an active segment, sorted and disjoint.
  package private(set) var held: [ByteRange]
  package private(set) var active: [Segment] = []
  package private(set) var nextID = 1
  /// Set once responses carry range digests: new segments start pinned, so none is split
  /// before its response shows whether it can be checked.
  package var pinsNewSegments = false

  /// - Parameter firstID: the first segment id, so ids stay unique across plans of one download.
  package init(total: Int64, held: [ByteRange], minimumSplit: Int64 = 1 << 20, firstID: Int = 1) {
    self.total = total
    self.minimumSplit = max(1, minimumSplit)
    self.nextID = firstID
    self.held = ByteRanges.normalized(
      held.map { ByteRange(start: max(0, $0.start), end: min(total, $0.end)) })
  }

  /// Bytes written: held plus the written part of every active segment.
  package var written: [ByteRange] {
    ByteRanges.normalized(held + active.map { ByteRange(start: $0.start, end: $0.cursor) })
  }

  package var writtenBytes: Int64 { written.reduce(0) { $0 + $1.count } }

  /// Written bytes plus those received but not yet written (`[cursor, reserved)`).
  package var receivedBytes: Int64 { active.reduce(writtenBytes) { $0 + $1.reserved - $1.cursor } }

  package var isComplete: Bool { active.isEmpty && (total == 0 || held == [ByteRange(start: 0, end: total)]) }

  /// Bytes neither held nor assigned to a connection.
  package var unassigned: [ByteRange] {
    ByteRanges.subtract(
      ByteRanges.normalized(held + active.map { ByteRange(start: $0.start, end: $0.end) }),
      from: ByteRange(start: 0, end: total))
  }

  /// Bytes still to fetch, assigned or not.
  package var remainingBytes: Int64 { total - writtenBytes }

  /// A range for a free connection, or nil when there is nothing worth taking: the first
  /// unassigned gap (front to back keeps a single connection sequential), else half of the
  /// largest range still being fetched, if that half is at least `smallestHalf` (by default
  /// `minimumSplit`).
  package mutating func claim(smallestHalf: Int64? = nil) -> Segment? {
    if let gap = unassigned.first {
      return open(gap.start, gap.end)
    }
    guard
      let victim = active.indices.filter({ !active[$0].pinned }).max(by: {
        active[$0].remaining < active[$1].remaining
      }),
      active[victim].remaining >= 2 * max(1, smallestHalf ?? minimumSplit)
    else { return nil }
    let middle = active[victim].reserved + active[victim].remaining / 2
    let end = active[victim].end
    active[victim].end = middle
    return open(middle, end)
  }

  /// Opens a segment over exactly `[start, end)` (the first connection, whose range is the whole file).
  package mutating func open(_ start: Int64, _ end: Int64) -> Segment {
    let segment = Segment(
      id: nextID, start: start, cursor: start, reserved: start, end: end, pinned: pinsNewSegments)
    nextID += 1
    active.append(segment)
    return segment
  }

  package func segment(_ id: Int) -> Segment? { active.first { $0.id == id } }

  /// Reserves up to `count` bytes after the segment's last reservation for bytes just received,
  /// so no other connection can be given them; returns where they go and how many (0 at its end).
  /// Reservations stack up while the bytes wait in a connection's block (see `BlockStager`).
  package mutating func reserve(_ id: Int, upTo count: Int64) -> (offset: Int64, count: Int64, pinned: Bool)?
  {
    guard let index = active.firstIndex(where: { $0.id == id }) else { return nil }
    let allowed = max(0, min(count, active[index].end - active[index].reserved))
    active[index].reserved += allowed
    return (active[index].reserved - allowed, allowed, active[index].pinned)
  }

  /// The file now holds the segment's reserved bytes up to `offset`.
  package mutating func markWritten(_ id: Int, through offset: Int64) {
    guard let index = active.firstIndex(where: { $0.id == id }) else { return }
    active[index].cursor = min(max(active[index].cursor, offset), active[index].reserved)
  }

  /// Marks all reserved bytes written (`succeeded`) or gives back those not yet written.
  package mutating func commitReservation(_ id: Int, succeeded: Bool) {
    guard let index = active.firstIndex(where: { $0.id == id }) else { return }
    if succeeded {
      active[index].cursor = active[index].reserved
    } else {
      active[index].reserved = active[index].cursor
    }
  }

  /// Whether the segment has all its bytes.
  package func isFinished(_ id: Int) -> Bool {
    guard let segment = segment(id) else { return true }
    return segment.cursor >= segment.end
  }

  /// Whether every byte of the segment has been received (some may not be written yet).
  package func isFullyReserved(_ id: Int) -> Bool {
    guard let segment = segment(id) else { return true }
    return segment.reserved >= segment.end
  }

  /// Keeps the segment whole until its response's digest is checked (see `Segment.pinned`).
  package mutating func pin(_ id: Int, _ pinned: Bool = true) {
    guard let index = active.firstIndex(where: { $0.id == id }) else { return }
    active[index].pinned = pinned
  }

  /// Ends a segment whose bytes failed their digest check: they become unassigned, to be fetched again.
  package mutating func discard(_ id: Int) {
    active.removeAll { $0.id == id }
  }

  /// How far the file is written without a gap from byte 0, not counting segments still
  /// awaiting their digest check: the bytes a whole-file hash may read. Cheap, no allocation.
  package var verifiedPrefix: Int64 {
    var end: Int64 = 0
    var index = 0
    while true {
      let before = end
      while index < held.count, held[index].start <= end {
        end = max(end, held[index].end)
        index += 1
      }
      for segment in active where !segment.pinned && segment.start <= end && segment.cursor > end {
        end = segment.cursor
      }
      if end == before { return end }
    }
  }

  /// Gives segment `id` the unassigned bytes right after it, up to `limit` (how far its
  /// connection's response goes): a range split off for a connection the server then declined
  /// goes back to the connection already sending it. Returns whether the segment grew.
  package mutating func extend(_ id: Int, upTo limit: Int64) -> Bool {
    guard let index = active.firstIndex(where: { $0.id == id }),
      let gap = unassigned.first(where: { $0.start == active[index].end }), min(gap.end, limit) > gap.start
    else { return false }
    active[index].end = min(gap.end, limit)
    return true
  }

  /// Ends a segment: its written part becomes held, the rest unassigned again.
  package mutating func release(_ id: Int) {
    guard let index = active.firstIndex(where: { $0.id == id }) else { return }
    let segment = active.remove(at: index)
    if segment.cursor > segment.start {
      held = ByteRanges.normalized(held + [ByteRange(start: segment.start, end: segment.cursor)])
    }
  }
}

/// Operations on sorted lists of half-open byte ranges.
package enum ByteRanges {
  /// Sorted, with overlapping and touching ranges merged and empty ones dropped.
  package static func normalized(_ ranges: [ByteRange]) -> [ByteRange] {
    var result: [ByteRange] = []
    for range in ranges.filter({ $0.end > $0.start }).sorted(by: { $0.start < $1.start }) {
      if let last = result.last, range.start <= last.end {
        result[result.count - 1].end = max(last.end, range.end)
      } else {
        result.append(range)
      }
    }
    return result
  }

  /// The parts of `whole` not covered by `ranges` (which must be normalized).
  package static func subtract(_ ranges: [ByteRange], from whole: ByteRange) -> [ByteRange] {
    var gaps: [ByteRange] = []
    var position = whole.start
    for range in ranges where range.end > whole.start && range.start < whole.end {
      if range.start > position { gaps.append(ByteRange(start: position, end: range.start)) }
      position = max(position, range.end)
    }
    if position < whole.end { gaps.append(ByteRange(start: position, end: whole.end)) }
    return gaps
  }
}
