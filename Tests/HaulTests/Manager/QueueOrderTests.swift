import Testing

@testable import Haul
@testable import HaulCore

@Suite("queue order")
struct QueueOrderTests {
  typealias Slot = QueueOrder.Slot

  static func slots(_ positions: [Int64]) -> [Slot] {
    positions.enumerated().map { Slot(position: $0.element, id: Queue.id(UInt64($0.offset + 1))) }
  }

  @Test(arguments: [
    // position, current, count → destination (aria2's clamping)
    (QueuePosition.index(0), 3, 5, 0),
    (.index(-4), 3, 5, 0),
    (.index(9), 0, 5, 4),
    (.offset(1), 3, 5, 4),
    (.offset(5), 3, 5, 4),
    (.offset(-2), 3, 5, 1),
    (.offset(Int.min), 3, 5, 0),
    (.fromEnd(0), 0, 5, 4),
    (.fromEnd(-1), 0, 5, 3),
    (.fromEnd(-9), 4, 5, 0),
    (.fromEnd(3), 0, 5, 4),
    (.index(0), 0, 1, 0),
  ])
  func destination(position: QueuePosition, current: Int, count: Int, expected: Int) {
    #expect(QueueOrder.destination(of: position, current: current, count: count) == expected)
  }

  @Test func appendingLeavesGapsAndInsertingSplitsThem() {
    let order = QueueOrder(Self.slots([100, 200, 300]))
    let end = order.positions(count: 2, atWaitingIndex: 3, waiting: order.slots)
    #expect(end.positions == [300 + QueueOrder.gap, 300 + 2 * QueueOrder.gap] && end.renumbered.isEmpty)
    let middle = order.positions(count: 3, atWaitingIndex: 1, waiting: order.slots)
    #expect(middle.positions == [125, 150, 175] && middle.renumbered.isEmpty)
    let front = order.positions(count: 1, atWaitingIndex: 0, waiting: order.slots)
    #expect(front.positions == [100 - QueueOrder.gap])
  }

  @Test func noRoomRenumbersEverythingInOrder() {
    let order = QueueOrder(Self.slots([5, 6, 7]))
    let (positions, renumbered) = order.positions(count: 2, atWaitingIndex: 2, waiting: order.slots)
    let gap = QueueOrder.gap
    #expect(positions == [3 * gap, 4 * gap])
    #expect(renumbered == [Queue.id(1): gap, Queue.id(2): 2 * gap, Queue.id(3): 5 * gap])
  }

  @Test func slotsStaySortedByPositionThenID() {
    var order = QueueOrder()
    for (position, id) in [(5, 3), (1, 9), (5, 1), (3, 2)] as [(Int64, UInt64)] {
      order.insert(Slot(position: position, id: Queue.id(id)))
    }
    #expect(order.ids.map(\.rawValue) == [9, 2, 1, 3])
    order.remove(Queue.id(1), at: 5)
    order.remove(Queue.id(7), at: 5)
    #expect(order.ids.map(\.rawValue) == [9, 2, 3])
  }
}
