import Testing

@testable import HaulCore

@Suite struct SegmentPlannerTests {
  static func range(_ start: Int64, _ end: Int64) -> ByteRange { ByteRange(start: start, end: end) }

  @Test func firstClaimTakesTheFirstGap() throws {
    var planner = SegmentPlanner(
      total: 1000, held: [Self.range(0, 100), Self.range(500, 600)], minimumSplit: 10)
    let firstClaimed = planner.claim()

    let first = try #require(firstClaimed)
    #expect((first.start, first.end) == (100, 500))
    let secondClaimed = planner.claim()

    let second = try #require(secondClaimed)
    #expect((second.start, second.end) == (600, 1000))
  }

  @Test func stealingTakesTheSecondHalfOfTheLargestRemainder() throws {
    var planner = SegmentPlanner(total: 1000, held: [], minimumSplit: 100)
    let whole = planner.open(0, 1000)
    let secondClaimed = planner.claim()

    let second = try #require(secondClaimed)
    #expect((second.start, second.end) == (500, 1000))
    #expect(planner.segment(whole.id)?.end == 500)
    // The largest remainder is now either half; after some progress on the first, the second is larger.
    _ = planner.reserve(whole.id, upTo: 200)
    planner.commitReservation(whole.id, succeeded: true)
    let thirdClaimed = planner.claim()

    let third = try #require(thirdClaimed)
    #expect((third.start, third.end) == (750, 1000))
  }

  @Test func neverSplitsBelowTheMinimum() {
    var planner = SegmentPlanner(total: 1000, held: [], minimumSplit: 600)
    _ = planner.open(0, 1000)
    #expect(planner.claim() == nil)
  }

  /// A smaller half than `minimumSplit` is taken when the caller says it is worth it.
  @Test func aSmallerHalfIsTakenWhenAsked() {
    var planner = SegmentPlanner(total: 1_000_000, held: [], minimumSplit: 400_000)
    let first = planner.open(0, 1_000_000)
    _ = planner.reserve(first.id, upTo: 300_000)
    let byDefault = planner.claim()
    #expect(byDefault == nil, "700,000 left: under twice the minimum")
    let asLarge = planner.claim(smallestHalf: 400_000)
    #expect(asLarge == nil)
    let half = planner.claim(smallestHalf: 100_000)
    #expect(half?.start == 650_000 && half?.end == 1_000_000)
    #expect(planner.segment(first.id)?.end == 650_000)
  }

  @Test func reservedBytesAreNeverStolen() throws {
    var planner = SegmentPlanner(total: 1000, held: [], minimumSplit: 10)
    let whole = planner.open(0, 1000)
    let reservationClaimed = planner.reserve(whole.id, upTo: 900)

    let reservation = try #require(reservationClaimed)
    #expect(reservation.offset == 0 && reservation.count == 900)
    let stolenClaimed = planner.claim()

    let stolen = try #require(stolenClaimed)
    #expect(stolen.start >= 900)
    #expect(planner.segment(whole.id)?.end == stolen.start)
  }

  @Test func writesStopAtTheSegmentEnd() throws {
    var planner = SegmentPlanner(total: 100, held: [], minimumSplit: 10)
    let segment = planner.open(0, 50)
    let first = planner.reserve(segment.id, upTo: 80)
    #expect(first?.offset == 0 && first?.count == 50)
    planner.commitReservation(segment.id, succeeded: true)
    #expect(planner.isFinished(segment.id))
    let after = planner.reserve(segment.id, upTo: 10)
    #expect(after?.offset == 50 && after?.count == 0)
  }

  @Test func receivedBytesCountOnlyOnceWritten() throws {
    var planner = SegmentPlanner(total: 1000, held: [], minimumSplit: 10)
    let segment = planner.open(0, 1000)
    // Reservations stack up while the bytes wait in a connection's block.
    #expect(planner.reserve(segment.id, upTo: 300)?.offset == 0)
    #expect(planner.reserve(segment.id, upTo: 300)?.offset == 300)
    planner.markWritten(segment.id, through: 256)
    #expect(planner.written == [Self.range(0, 256)])
    #expect(planner.verifiedPrefix == 256)
    // Never past what was reserved; never backwards.
    planner.markWritten(segment.id, through: 900)
    #expect(planner.segment(segment.id)?.cursor == 600)
    planner.markWritten(segment.id, through: 100)
    #expect(planner.segment(segment.id)?.cursor == 600)
    #expect(!planner.isFullyReserved(segment.id))
    _ = planner.reserve(segment.id, upTo: 500)
    #expect(planner.isFullyReserved(segment.id) && !planner.isFinished(segment.id))
  }

  @Test func releaseDropsReceivedButUnwrittenBytes() throws {
    var planner = SegmentPlanner(total: 100, held: [], minimumSplit: 10)
    let segment = planner.open(0, 100)
    _ = planner.reserve(segment.id, upTo: 60)
    planner.markWritten(segment.id, through: 40)
    planner.release(segment.id)
    #expect(planner.held == [Self.range(0, 40)])
    #expect(planner.unassigned == [Self.range(40, 100)])
  }

  @Test func failedWritesAreGivenBack() throws {
    var planner = SegmentPlanner(total: 100, held: [], minimumSplit: 10)
    let segment = planner.open(0, 100)
    _ = planner.reserve(segment.id, upTo: 40)
    planner.commitReservation(segment.id, succeeded: false)
    #expect(planner.writtenBytes == 0)
    #expect(planner.segment(segment.id)?.reserved == 0)
  }

  @Test func releaseKeepsWhatWasWrittenAndFreesTheRest() throws {
    var planner = SegmentPlanner(total: 100, held: [], minimumSplit: 10)
    let segment = planner.open(0, 100)
    _ = planner.reserve(segment.id, upTo: 30)
    planner.commitReservation(segment.id, succeeded: true)
    planner.release(segment.id)
    #expect(planner.held == [Self.range(0, 30)])
    #expect(planner.unassigned == [Self.range(30, 100)])
    #expect(!planner.isComplete)
    let restClaimed = planner.claim()

    let rest = try #require(restClaimed)
    _ = planner.reserve(rest.id, upTo: 70)
    planner.commitReservation(rest.id, succeeded: true)
    planner.release(rest.id)
    #expect(planner.isComplete)
  }

  @Test func writtenIsTheUnionOfHeldAndActive() {
    var planner = SegmentPlanner(total: 100, held: [Self.range(0, 10)], minimumSplit: 10)
    let segment = planner.open(10, 50)
    _ = planner.reserve(segment.id, upTo: 5)
    planner.commitReservation(segment.id, succeeded: true)
    #expect(planner.written == [Self.range(0, 15)])
    #expect(planner.remainingBytes == 85)
  }

  @Test func heldRangesAreClampedAndMerged() {
    let planner = SegmentPlanner(
      total: 100, held: [Self.range(50, 200), Self.range(0, 10), Self.range(10, 20)])
    #expect(planner.held == [Self.range(0, 20), Self.range(50, 100)])
  }

  @Test func manyConnectionsShareTheWorkEvenly() {
    var planner = SegmentPlanner(total: 16 << 20, held: [], minimumSplit: 1 << 20)
    _ = planner.open(0, 16 << 20)
    while planner.claim() != nil {}
    #expect(planner.active.count == 16)
    #expect(planner.active.allSatisfy { $0.remaining == 1 << 20 })
  }

  @Test func rangeArithmetic() {
    #expect(
      ByteRanges.normalized([Self.range(5, 5), Self.range(3, 4), Self.range(0, 3)]) == [Self.range(0, 4)])
    #expect(
      ByteRanges.subtract([Self.range(10, 20), Self.range(30, 40)], from: Self.range(0, 50))
        == [Self.range(0, 10), Self.range(20, 30), Self.range(40, 50)])
    #expect(ByteRanges.subtract([], from: Self.range(0, 5)) == [Self.range(0, 5)])
  }

  @Test func pinnedSegmentsAreNeverSplit() throws {
    var planner = SegmentPlanner(total: 1000, held: [], minimumSplit: 10)
    let whole = planner.open(0, 1000)
    planner.pin(whole.id)
    #expect(planner.claim() == nil)
    planner.pin(whole.id, false)
    let claimed = planner.claim()
    #expect(try #require(claimed).start == 500)
    // Once ranges carry digests, new segments start pinned until their response is seen.
    planner.pinsNewSegments = true
    let gapless = SegmentPlanner(total: 1000, held: [Self.range(0, 1000)])
    #expect(gapless.verifiedPrefix == 1000)
    var fresh = SegmentPlanner(total: 1000, held: [], minimumSplit: 10)
    fresh.pinsNewSegments = true
    let pinned = fresh.open(0, 1000)
    #expect(fresh.segment(pinned.id)?.pinned == true)
    #expect(fresh.claim() == nil)
  }

  @Test func discardedBytesAreFetchedAgain() throws {
    var planner = SegmentPlanner(total: 1000, held: [Self.range(0, 400)], minimumSplit: 10)
    let segment = planner.open(400, 1000)
    _ = planner.reserve(segment.id, upTo: 600)
    planner.commitReservation(segment.id, succeeded: true)
    planner.discard(segment.id)
    #expect(planner.written == [Self.range(0, 400)])
    #expect(planner.unassigned == [Self.range(400, 1000)])
    #expect(!planner.isComplete)
  }

  @Test func verifiedPrefixStopsAtGapsAndUncheckedRanges() {
    var planner = SegmentPlanner(
      total: 1000, held: [Self.range(0, 100), Self.range(300, 400)], minimumSplit: 10)
    #expect(planner.verifiedPrefix == 100)
    let middle = planner.open(100, 300)
    _ = planner.reserve(middle.id, upTo: 200)
    planner.commitReservation(middle.id, succeeded: true)
    // The segment closes the gap, and the held range after it joins the prefix.
    #expect(planner.verifiedPrefix == 400)
    planner.pin(middle.id)
    #expect(planner.verifiedPrefix == 100)
    planner.release(middle.id)
    #expect(planner.verifiedPrefix == 400)
  }
}

extension SegmentPlannerTests {
  /// A declined connection's range goes back to the segment before it, as far as that one's
  /// response reaches, and only over bytes nobody holds or fetches.
  @Test func extendTakesTheGapRightAfterUpToTheLimit() {
    var planner = SegmentPlanner(total: 1000, held: [Self.range(800, 900)], minimumSplit: 10)
    let first = planner.open(0, 300)
    let third = planner.open(600, 700)
    let toTheLimit = planner.extend(first.id, upTo: 500)
    #expect(toTheLimit && planner.segment(first.id)?.end == 500)
    let toTheNextSegment = planner.extend(first.id, upTo: 1000)
    #expect(toTheNextSegment && planner.segment(first.id)?.end == 600, "not into another segment")
    let noGapLeft = planner.extend(first.id, upTo: 1000)
    #expect(!noGapLeft)
    let toHeldBytes = planner.extend(third.id, upTo: 1000)
    #expect(toHeldBytes && planner.segment(third.id)?.end == 800, "not over held bytes")
    let unknown = planner.extend(99, upTo: 1000)
    #expect(!unknown, "an unknown segment")
  }
}
