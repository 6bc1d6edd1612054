import Testing

@testable import HaulCore

@Suite struct ConnectionControllerTests {
  /// What one run of the controller did, tick by tick.
  struct Trace {
    /// When each count was first wanted, in ms from the start.
    var reached: [Int: Int] = [:]
    /// The count wanted after each tick.
    var counts: [Int] = []
    /// When a step back was said, in ms from the start.
    var stepsBack: [Int] = []
  }

  /// Ticks of 50 ms. `rate(open, msSinceTheCountChanged)` is the total bytes per second `open`
  /// connections deliver; the wanted count opens (or closes) at once.
  static func run(
    _ controller: inout ConnectionController, ticks: Int = 40, latency: UInt64? = nil,
    useful: Int = 64, rate: (_ open: Int, _ sinceChange: Int) -> Double
  ) -> Trace {
    run(&controller, ticks: ticks, latency: latency, useful: useful) { open, sinceChange, _ in
      rate(open, sinceChange)
    }
  }

  /// As `run`, with a rate that may change over time (`ms`: since the start), and a rate
  /// limit that may too (`rateCap`, passed on before a tick whenever it differs).
  static func run(
    _ controller: inout ConnectionController, ticks: Int = 40, latency: UInt64? = nil,
    useful: Int = 64, rateCap: ((_ ms: Int) -> Double?)? = nil,
    rate: (_ open: Int, _ sinceChange: Int, _ ms: Int) -> Double
  ) -> Trace {
    var now: UInt64 = 1_000_000_000
    var bytes: Int64 = 0
    var trace = Trace()
    var open = controller.update(
      now: now, bytes: bytes, open: 1, rangesSupported: true, maximumUseful: useful, answerLatency: latency
    ).wanted
    var changed = 0
    for tick in 1...ticks {
      let ms = tick * 50
      now += 50_000_000
      bytes += Int64(rate(open, ms - changed, ms) / 20)
      if let rateCap, rateCap(ms) != controller.rateCap {
        controller.changeRateCap(to: rateCap(ms), now: now)
      }
      let decision = controller.update(
        now: now, bytes: bytes, open: open, rangesSupported: true, maximumUseful: useful,
        answerLatency: latency)
      if decision.stepBack { trace.stepsBack.append(ms) }
      if decision.wanted != open { changed = ms }
      open = decision.wanted
      if trace.reached[open] == nil { trace.reached[open] = ms }
      trace.counts.append(open)
    }
    return trace
  }

  static func automatic(rateCap: Double? = nil) -> ConnectionController {
    ConnectionController(mode: .automatic(cap: 16), rateCap: rateCap)
  }

  /// A server that limits each connection: every step pays, up to the cap. The baseline takes
  /// two slices of 50 ms (the rate is steady), four connections show a linear gain after
  /// 50 ms (acted on early), so 16 run after 200 ms.
  @Test func aServerThatPacesEachConnectionGetsTheCap() {
    var controller = Self.automatic()
    let trace = Self.run(&controller) { open, _ in 2e6 * Double(open) }
    #expect(trace.reached[4] == 100, "\(trace.reached)")
    #expect(trace.reached[16] == 200, "\(trace.reached)")
    #expect(trace.counts.last == 16 && trace.stepsBack.isEmpty)
  }

  /// One connection fills the link (a fast local network, or a disk-bound machine): four are
  /// tried, bring nothing, and are closed again after the whole window; none is tried after.
  @Test func aStepThatBringsNothingIsUndone() {
    var controller = Self.automatic()
    let trace = Self.run(&controller) { _, _ in 1e9 }
    #expect(trace.counts.max() == 4, "\(trace.counts)")
    #expect(trace.stepsBack == [350], "\(trace.stepsBack)")
    #expect(trace.counts.suffix(20).allSatisfy { $0 == 1 }, "\(trace.counts)")
  }

  /// Four connections pay, sixteen do not (the link is full at four): back to four.
  @Test func aLaterStepThatBringsNothingReturnsToTheCountBefore() {
    var controller = Self.automatic()
    let trace = Self.run(&controller) { open, _ in min(8e6, 2e6 * Double(open)) }
    #expect(trace.reached[16] != nil, "\(trace.reached)")
    #expect(trace.stepsBack.count == 1 && trace.counts.last == 4, "\(trace.counts) \(trace.stepsBack)")
  }

  /// A new connection reaches its speed over its first 150 ms (TCP windows, the first writes).
  /// The baseline waits for that: measured at the start, one connection would look four times
  /// slower than it is, and four connections that share the same link would look like a gain
  /// (which kept 16 connections on a loopback link where one was fastest).
  @Test func theBaselineWaitsForTheFirstConnectionToReachItsSpeed() {
    var controller = Self.automatic()
    let ramp = [0.25, 0.8, 0.95, 1.0]
    let trace = Self.run(&controller) { open, since in
      open == 1 && since < 200 ? 1e9 * ramp[since / 50 - 1] : 1e9
    }
    #expect(trace.reached[4] == 200, "\(trace.reached)")
    #expect(trace.reached[16] == nil && trace.stepsBack.count == 1, "\(trace.reached)")
    #expect(trace.counts.last == 1)
  }

  /// A connection that keeps accelerating (slow start on a long link) is measured for one
  /// window at most before the first step.
  @Test func theBaselineEndsAfterOneWindow() {
    var controller = Self.automatic()
    let trace = Self.run(&controller, ticks: 10) { open, since in
      open == 1 ? 1e6 * pow2(since / 50) : 64e6
    }
    #expect(trace.reached[4] == 200, "\(trace.reached)")
  }

  /// A gain that is real but far from linear (four connections, 1.6 times the rate) waits
  /// for the whole 200 ms window; from twice the rate on, the step is taken early.
  @Test func aPartialGainWaitsForTheWholeWindow() {
    func sixteenAt(_ perConnectionAtFour: Double) -> Int? {
      var controller = Self.automatic()
      return Self.run(&controller) { open, _ in open == 1 ? 2e6 : perConnectionAtFour * Double(open) }
        .reached[16]
    }
    #expect(sixteenAt(0.8e6) == 350)
    #expect(sixteenAt(2e6 * 0.49) == 350)
    #expect(sixteenAt(2e6 * 0.51) == 200)
  }

  /// With the time a request takes to be answered known, a step is judged after four of them:
  /// on a local link after 100 ms (the shortest window), on a long one later. Unknown, after
  /// the 200 ms window.
  @Test func aStepIsJudgedAfterFourAnswerTimes() {
    func stepBack(latency: UInt64?) -> [Int] {
      var controller = Self.automatic()
      return Self.run(&controller, latency: latency) { _, _ in 1e7 }.stepsBack
    }
    // Four connections from 100 ms, measured from 150 ms (the tick after they opened).
    #expect(stepBack(latency: 1_000_000) == [250])
    #expect(stepBack(latency: nil) == [350])
    #expect(stepBack(latency: 100_000_000) == [550])
  }

  /// `--limit-rate`: one connection that reaches the limit gets no company; below it, only as
  /// many as the limit needs at the rate each shows (and one more).
  @Test func aRateLimitStopsConnectionsThatCannotHelp() {
    var capped = Self.automatic(rateCap: 1e6)
    let alone = Self.run(&capped) { open, _ in min(1e6, 5e6 * Double(open)) }
    #expect(alone.counts.max() == 1, "\(alone.counts)")
    var shared = Self.automatic(rateCap: 10e6)
    let some = Self.run(&shared) { open, _ in min(10e6, 2e6 * Double(open)) }
    #expect(some.counts.max() == 6 && some.counts.last == 6, "\(some.counts)")
    #expect(some.stepsBack.isEmpty)
  }

  /// Near the end of a download, fewer connections are useful: the count follows, without a
  /// step back (the transfers running finish their ranges).
  @Test func fewerUsefulConnectionsAreNotAStepBack() {
    var controller = Self.automatic()
    let trace = Self.run(&controller, useful: 3) { open, _ in 2e6 * Double(open) }
    #expect(trace.counts.max() == 3 && trace.stepsBack.isEmpty, "\(trace.counts)")
  }

  @Test func oneConnectionWithoutRanges() {
    var controller = ConnectionController(mode: .fixed(8))
    func wanted(_ ranges: Bool, useful: Int) -> Int {
      controller.update(now: 1, bytes: 0, open: 1, rangesSupported: ranges, maximumUseful: useful).wanted
    }
    #expect(wanted(false, useful: 64) == 1)
    #expect(wanted(true, useful: 64) == 8)
    #expect(wanted(true, useful: 3) == 3)
  }

  /// A link one connection fills until 5 s, then a server that paces each connection: the
  /// step back at 350 ms is not for good. Growth is tried again 10 s after it, from a new
  /// baseline, and reaches the cap.
  @Test func growthIsTriedAgainAfterAStepBack() {
    var controller = Self.automatic()
    let trace = Self.run(&controller, ticks: 240) { open, _, ms in ms < 5_000 ? 1e9 : 5e7 * Double(open) }
    #expect(trace.stepsBack == [350], "\(trace.stepsBack)")
    #expect(trace.counts[7..<206].allSatisfy { $0 == 1 }, "\(trace.counts)")
    let reached = trace.reached[16] ?? 0
    #expect(reached > 10_350 && reached <= 10_800, "\(trace.reached)")
    #expect(trace.counts.last == 16)
  }

  /// A link one connection fills for good: each try is undone, and the next waits twice as
  /// long (10 s, then 20 s), so the extra connections run for a small share of the time.
  @Test func triesThatBringNothingAreSpacedFurtherApart() {
    var controller = Self.automatic()
    let trace = Self.run(&controller, ticks: 1_200) { _, _ in 1e9 }
    #expect(trace.stepsBack.count == 3, "\(trace.stepsBack)")
    if trace.stepsBack.count == 3 {
      let gaps = zip(trace.stepsBack.dropFirst(), trace.stepsBack).map { $0 - $1 }
      #expect(gaps[0] > 10_000 && gaps[0] <= 10_500, "\(gaps)")
      #expect(gaps[1] > 20_000 && gaps[1] <= 20_500, "\(gaps)")
    }
    #expect(trace.counts.max() == 4)
    #expect(trace.counts.count { $0 > 1 } <= 18, "\(trace.counts.count { $0 > 1 }) ticks of 1,200")
  }

  /// A limit lifted while the download runs (a shared one, set from elsewhere): growth that
  /// stopped at it is tried 400 ms later, from a new baseline. What the server sent ahead
  /// while the limit held arrives in the first 100 ms (here 20 MB) and is not taken for the
  /// speed of one connection. Raised but still reached, the try measures one connection at
  /// the new limit and adds none.
  @Test func aLiftedRateLimitIsTriedSoon() {
    func trace(_ cap: @escaping (Int) -> Double?) -> Trace {
      var controller = Self.automatic(rateCap: 1e6)
      return Self.run(&controller, ticks: 200, rateCap: cap) { open, _, ms in
        if cap(ms) == nil, ms > 5_000, ms <= 5_100 { return 2e8 }
        return min(cap(ms) ?? .infinity, 5e6 * Double(open))
      }
    }
    let lifted = trace { ms in ms <= 5_000 ? 1e6 : nil }
    #expect(lifted.counts[..<107].allSatisfy { $0 == 1 }, "\(lifted.counts)")
    let reached = lifted.reached[16] ?? 0
    #expect(reached > 5_400 && reached <= 5_700, "\(lifted.reached)")
    #expect(lifted.stepsBack.isEmpty, "\(lifted.stepsBack)")
    let raised = trace { ms in ms < 5_000 ? 1e6 : 2e6 }
    #expect(raised.counts.allSatisfy { $0 == 1 }, "\(raised.counts)")
    #expect(raised.stepsBack.isEmpty)
  }

  /// After three step backs the next try is 40 s off. A limit lifted at 35 s is tried soon;
  /// one lowered then is not, and the count stays. Fixed mode ignores both.
  @Test func aLiftedLimitDoesNotWaitForTheNextTry() {
    func trace(_ cap: @escaping (Int) -> Double?) -> Trace {
      var controller = Self.automatic(rateCap: 2e9)
      // One connection fills the link until 35 s; then the server paces each connection.
      return Self.run(&controller, ticks: 800, rateCap: cap) { open, _, ms in
        ms < 35_000 ? 1e9 : min(cap(ms) ?? .infinity, 5e7 * Double(open))
      }
    }
    // counts[i] is the count after the tick at (i + 1) × 50 ms: 699 is 35 s.
    let lifted = trace { ms in ms < 35_000 ? 2e9 : nil }
    #expect(lifted.stepsBack.count == 3, "\(lifted.stepsBack)")
    let reached = lifted.reached[16] ?? 0
    #expect(reached > 35_400 && reached <= 35_700, "\(lifted.reached)")
    for kept in [trace { _ in 2e9 }, trace { ms in ms < 35_000 ? 2e9 : 5e8 }] {
      #expect(kept.stepsBack.count == 3, "\(kept.stepsBack)")
      #expect(kept.counts[699...].allSatisfy { $0 == 1 }, "\(kept.counts[699...])")
    }
    var fixed = ConnectionController(mode: .fixed(4), rateCap: 1e6)
    fixed.changeRateCap(to: nil, now: 1)
    #expect(fixed.rateCap == nil)
    #expect(fixed.update(now: 2, bytes: 0, open: 4, rangesSupported: true, maximumUseful: 64).wanted == 4)
  }

  /// No try while the bytes left cannot keep more connections busy.
  @Test func noTryWithoutBytesForMoreConnections() {
    var controller = Self.automatic()
    _ = Self.run(&controller) { _, _ in 1e9 }  // stepped back to 1 at 350 ms
    let later: UInt64 = 1_000_000_000 + 60_000_000_000
    for tick in 0..<10 {
      let decision = controller.update(
        now: later + UInt64(tick) * 50_000_000, bytes: 60_000_000_000 + Int64(tick) * 50_000_000, open: 1,
        rangesSupported: true, maximumUseful: 1)
      #expect(decision == ConnectionController.Decision(wanted: 1))
    }
    #expect(controller.target == 1)
  }
}

private func pow2(_ exponent: Int) -> Double { Double(1 << min(exponent, 30)) }

extension ConnectionControllerTests {
  /// Once the server declined a connection, neither mode asks for more than it took, even
  /// when a rate limit is lifted, until `reprobeDelay` later; a second decline waits twice as long.
  @Test func aDeclinedConnectionCapsBothModesForAWhile() {
    var fixed = ConnectionController(mode: .fixed(8))
    fixed.connectionDeclined(working: 2, live: 2, now: 0)
    #expect(fixed.update(now: 1, bytes: 0, open: 2, rangesSupported: true, maximumUseful: 64).wanted == 2)
    let later = fixed.reprobeDelay
    #expect(fixed.update(now: later, bytes: 0, open: 2, rangesSupported: true, maximumUseful: 64).wanted == 8)
    fixed.connectionDeclined(working: 0, live: 0, now: later)
    #expect(fixed.serverLimit?.count == 1, "never fewer than one")
    #expect(fixed.limit(at: later &+ 2 * fixed.reprobeDelay &- 1) == 1)
    #expect(fixed.limit(at: later &+ 2 * fixed.reprobeDelay) == nil)

    var automatic = Self.automatic(rateCap: 1e6)
    let grown = Self.run(&automatic, ticks: 10) { open, _ in 2e5 * Double(open) }
    #expect((grown.counts.last ?? 0) > 1, "\(grown.counts)")
    // The run's clock starts at 1 s and ticks every 50 ms: its next run starts where it was.
    automatic.connectionDeclined(working: 3, live: 3, now: 1_000_000_000)
    automatic.changeRateCap(to: nil, now: 1_000_000_000)
    let after = Self.run(&automatic, ticks: 40) { open, _ in 2e6 * Double(open) }
    #expect(after.counts.allSatisfy { $0 <= 3 }, "\(after.counts)")
  }
}
