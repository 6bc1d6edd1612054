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

@Suite struct ConnectionControllerTests {
  /// Feeds windows in which each connection delivers `perConnection` bytes per second, up to `link`.
  static func simulate(
    _ controller: inout ConnectionController, perConnection: Double, link: Double, windows: Int
  ) -> [Int] {
    var now: UInt64 = 1_000_000_000
    var bytes: Int64 = 0
    var counts: [Int] = []
    var open = controller.update(now: now, bytes: bytes, open: 1, rangesSupported: true, maximumUseful: 64)
    for _ in 0..<windows {
      let rate = min(link, perConnection * Double(open))
      now += 250_000_000
      bytes += Int64(rate / 4)
      open = controller.update(now: now, bytes: bytes, open: open, rangesSupported: true, maximumUseful: 64)
      open = controller.update(now: now, bytes: bytes, open: open, rangesSupported: true, maximumUseful: 64)
      counts.append(open)
    }
    return counts
  }

  @Test func growsWhileThroughputRisesUpToTheCap() {
    var controller = ConnectionController(mode: .automatic(cap: 16))
    let counts = Self.simulate(&controller, perConnection: 2e6, link: 1e12, windows: 6)
    #expect(counts.last == 16)
  }

  @Test func stopsGrowingWhenMoreConnectionsDoNotHelp() {
    var controller = ConnectionController(mode: .automatic(cap: 16))
    // The link is saturated by one connection: four are tried once, then no more.
    let counts = Self.simulate(&controller, perConnection: 1e9, link: 1e9, windows: 8)
    #expect(counts.last == 4)
    #expect(counts.max() == 4)
  }

  /// `--limit-rate`: one connection that reaches the limit gets no company; below it, only as
  /// many as the limit needs at the rate each shows (and one more).
  @Test func aRateLimitStopsConnectionsThatCannotHelp() {
    var capped = ConnectionController(mode: .automatic(cap: 16), rateCap: 1e6)
    let alone = Self.simulate(&capped, perConnection: 5e6, link: 1e6, windows: 8)
    #expect(alone.max() == 1, "\(alone)")
    var shared = ConnectionController(mode: .automatic(cap: 16), rateCap: 10e6)
    let some = Self.simulate(&shared, perConnection: 2e6, link: 10e6, windows: 8)
    #expect(some.max() == 6 && some.last == 6, "\(some)")
    var unlimited = ConnectionController(mode: .automatic(cap: 16))
    #expect(Self.simulate(&unlimited, perConnection: 2e6, link: 1e12, windows: 6).last == 16)
  }

  /// Ticks of 50 ms; each connection delivers `perConnection(n)` bytes per second when `n`
  /// are open. Returns when each count was first wanted, in ms from the start.
  static func ramp(_ perConnection: (Int) -> Double) -> [Int: Int] {
    var controller = ConnectionController(mode: .automatic(cap: 16))
    var now: UInt64 = 1_000_000_000
    var bytes: Int64 = 0
    var open = controller.update(now: now, bytes: bytes, open: 1, rangesSupported: true, maximumUseful: 64)
    var reached: [Int: Int] = [:]
    for _ in 0..<20 {
      now += 50_000_000
      bytes += Int64(perConnection(open) * Double(open) / 20)
      open = controller.update(now: now, bytes: bytes, open: open, rangesSupported: true, maximumUseful: 64)
      if reached[open] == nil { reached[open] = Int((now - 1_000_000_000) / 1_000_000) }
    }
    return reached
  }

  /// The baseline of one connection takes 50 ms. A server that limits each connection shows
  /// a linear gain from four, which is acted on after 100 ms: 16 connections after 200 ms (the
  /// step starts at the tick after the connections it measures are open).
  @Test func theBaselineWindowIsShorterThanTheSteps() {
    let reached = Self.ramp { _ in 2e6 }
    #expect(reached[4] == 50, "\(reached)")
    #expect(reached[16] == 200, "\(reached)")
  }

  /// A gain that is real but far from linear (four connections, 1.6 times the rate, as when
  /// new connections are still in slow start or share a link) waits for the whole 200 ms
  /// window; from twice the rate on, the step is taken early.
  @Test func aPartialGainWaitsForTheWholeWindow() {
    let reached = Self.ramp { open in open == 1 ? 2e6 : 0.8e6 }
    #expect(reached[4] == 50, "\(reached)")
    #expect(reached[16] == 300, "\(reached)")
    let almost = Self.ramp { open in open == 1 ? 2e6 : 2e6 * 0.49 }
    #expect(almost[16] == 300, "\(almost)")
    let enough = Self.ramp { open in open == 1 ? 2e6 : 2e6 * 0.51 }
    #expect(enough[16] == 200, "\(enough)")
  }

  /// No gain: the step back is not taken early either; the count holds at four.
  @Test func noGainStillHoldsAfterTheWholeWindow() {
    let reached = Self.ramp { open in 2e6 / Double(open) }
    #expect(reached[4] == 50 && reached[16] == nil, "\(reached)")
  }

  @Test func oneConnectionWithoutRanges() {
    var controller = ConnectionController(mode: .fixed(8))
    #expect(controller.update(now: 1, bytes: 0, open: 1, rangesSupported: false, maximumUseful: 64) == 1)
    #expect(controller.update(now: 1, bytes: 0, open: 1, rangesSupported: true, maximumUseful: 64) == 8)
    #expect(controller.update(now: 1, bytes: 0, open: 1, rangesSupported: true, maximumUseful: 3) == 3)
  }

}
