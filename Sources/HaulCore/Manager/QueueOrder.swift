/// The order of a manager's downloads: every record has a position, lower first (ties by id).
/// Positions are sparse (`gap` apart when appended), so that inserting or moving one download
/// rewrites one row; when two neighbours leave no room, everything is renumbered once.
///
/// The waiting queue (queued and paused downloads) is the subsequence that `QueuePosition`
/// indexes, as aria2's queue does.
package struct QueueOrder: Sendable, Equatable {
  package static let gap: Int64 = 1 << 20

  package struct Slot: Sendable, Equatable, Comparable {
    package var position: Int64
    package var id: DownloadID
    package static func < (a: Slot, b: Slot) -> Bool { (a.position, a.id) < (b.position, b.id) }
  }

  /// Every download, sorted.
  package private(set) var slots: [Slot] = []

  package init(_ slots: [Slot] = []) { self.slots = slots.sorted() }

  package var ids: [DownloadID] { slots.map(\.id) }

  package mutating func insert(_ slot: Slot) {
    slots.insert(slot, at: insertionIndex(of: slot))
  }

  package mutating func remove(_ id: DownloadID, at position: Int64) {
    let index = insertionIndex(of: Slot(position: position, id: id))
    if index < slots.count, slots[index].id == id { slots.remove(at: index) }
  }

  private func insertionIndex(of slot: Slot) -> Int {
    var low = 0
    var high = slots.count
    while low < high {
      let middle = (low + high) / 2
      if slots[middle] < slot { low = middle + 1 } else { high = middle }
    }
    return low
  }

  /// Where new or moved downloads go so that they sit, in order, at index `index` of `waiting`
  /// (the waiting queue without them; past its end means after everything).
  ///
  /// - Returns: their positions, and the renumbering of everything else when there was no room
  ///   (empty otherwise): `renumbered` maps every existing id to a new position.
  package func positions(
    count: Int, atWaitingIndex index: Int, waiting: [Slot]
  ) -> (positions: [Int64], renumbered: [DownloadID: Int64]) {
    guard count > 0 else { return ([], [:]) }
    let last = slots.last?.position ?? 0
    guard index < waiting.count else {
      return ((1...count).map { last + Int64($0) * Self.gap }, [:])
    }
    let next = waiting[index].position
    let previous = index > 0 ? waiting[index - 1].position : next - Int64(count + 1) * Self.gap
    let step = (next - previous) / Int64(count + 1)
    if step >= 1 {
      return ((1...count).map { previous + Int64($0) * step }, [:])
    }
    // No room between the neighbours: renumber everything, leaving `count` places before `next`.
    var renumbered: [DownloadID: Int64] = [:]
    var positions: [Int64] = []
    var position: Int64 = 0
    for slot in slots {
      if slot.id == waiting[index].id {
        for _ in 0..<count {
          position += Self.gap
          positions.append(position)
        }
      }
      position += Self.gap
      renumbered[slot.id] = position
    }
    return (positions, renumbered)
  }

  /// aria2's `changePosition` destination for a download at `current` in a queue of `count`:
  /// clamped to `0..<count`.
  package static func destination(of position: QueuePosition, current: Int, count: Int) -> Int {
    let target =
      switch position {
      case .index(let index): index
      case .offset(let offset): saturatingSum(current, offset)
      case .fromEnd(let offset): saturatingSum(count - 1, min(offset, 0))
      }
    return max(0, min(count - 1, target))
  }

  private static func saturatingSum(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? (b > 0 ? Int.max : Int.min) : sum
  }
}
