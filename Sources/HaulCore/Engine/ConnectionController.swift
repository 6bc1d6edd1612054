/// How many connections a download should use, decided from the throughput it measures.
///
/// Automatic mode starts with one connection and measures it until it stops accelerating (a
/// new connection's first tens of milliseconds understate it: TCP windows, the file's first
/// writes). Once the server has shown it serves ranges, it multiplies the count while each step
/// raises total throughput by at least `minimumGain`. A step that does not is undone
/// (`Decision.stepBack`): connections that bring nothing still cost the server, memory, and a
/// second read of the bytes they write out of order (the whole-file hash follows the file
/// front to back). After a step back, growth is tried again later (`reprobeDelay`): the link
/// may have changed, or a burst may have misled one reading. Pure: the engine feeds it byte
/// counts and clock readings.
package struct ConnectionController: Sendable, Equatable {
  package enum Mode: Sendable, Equatable {
    case fixed(Int)
    case automatic(cap: Int)
  }

  /// What the download should do now.
  package struct Decision: Sendable, Equatable {
    /// Connections wanted.
    package var wanted: Int
    /// The last step did not pay off: the connections beyond `wanted` are to be closed. Said
    /// once per step; the count then stays until growth is tried again.
    package var stepBack = false

    package init(wanted: Int, stepBack: Bool = false) {
      self.wanted = wanted
      self.stepBack = stepBack
    }
  }

  package let mode: Mode
  /// The strictest rate limit on the download (bytes per second), if any: connections that
  /// could only share it are not added. It changes with `changeRateCap`.
  package private(set) var rateCap: Double?
  /// Length of one measurement of a step while the time a request takes to be answered is
  /// unknown, and the longest baseline; nanoseconds. With that time known, a step is judged
  /// after `answerLatencies` of it, never before `shortestWindow`: new connections reach their
  /// speed within a few round trips (TCP slow start), so on a local link a tenth of a second
  /// shows what they bring (every tenth of a second more with connections that bring nothing
  /// is bytes written out of order, to be read back for the hash), on a long one it takes longer.
  package var window: UInt64 = 200_000_000
  package var answerLatencies: UInt64 = 4
  /// One connection alone is measured in slices this long until a slice is not `minimumGain`
  /// faster than the one before (it reached its speed), for at most `window`. On a server that
  /// paces each connection, two slices; on a fast local link, three or four. The faster of the
  /// last two is the baseline the first step is compared with.
  package var baselineSlice: UInt64 = 50_000_000
  /// The shortest window after which a step is judged.
  package var shortestWindow: UInt64 = 100_000_000
  /// The shortest one after which a clear gain (`earlyGainShare`) is acted on: a server that
  /// paces each connection shows it at once, and every 50 ms sooner is 50 ms at the full rate.
  package var earlyWindow: UInt64 = 50_000_000
  package var growthFactor = 4
  package var minimumGain = 1.15
  /// A step whose connections already deliver this share of a linear gain after
  /// `earlyWindow` (four connections, twice the rate of one) is taken then, without waiting
  /// for the whole window. New connections on a real network start slowly (TCP slow start),
  /// so an early reading understates what they bring; one this clear would pass the
  /// `minimumGain` test at the end of the window too. Shorter readings are noisy (a paced
  /// server sends in bursts), hence half, not all, of the linear gain.
  package var earlyGainShare = 0.5
  /// After a step back, growth is tried again this long after it (a new baseline of the
  /// connections left, then a step), and twice as long after each later step back, up to
  /// `longestReprobeDelay`. A try that brings nothing costs a few tenths of a second of
  /// connections writing out of order; one every ten seconds or more is a small share.
  package var reprobeDelay: UInt64 = 10_000_000_000
  package var longestReprobeDelay: UInt64 = 320_000_000_000
  /// How long after a rate limit is lifted growth is tried. What the server sent ahead while
  /// the limit held (socket buffers: up to megabytes) arrives at once when it goes, after the
  /// transfers it paused wake; a baseline that counted that burst would make any step look
  /// useless.
  package var liftSettle: UInt64 = 400_000_000

  package private(set) var target = 1
  /// The most connections the server took at once, after it declined another (a per-client
  /// limit: `503`, `429`, a refused connection), and until when no more are asked for, in
  /// either mode. Then more are tried again, as after a step back (`reprobeDelay`, doubling
  /// after each decline): a decline may have been a passing overload too.
  package private(set) var serverLimit: (count: Int, until: UInt64)?
  private var declineDelay: UInt64?
  /// The rate an early step needs, as a multiple of the previous one: the share of a linear
  /// gain from the last step (1 → 4 connections: 2×).
  private var earlyGain = 4.0
  private var growing = true
  /// The count before the last step: where a step back returns.
  private var previousTarget = 1
  private var previousRate: Double?
  private var windowStart: (time: UInt64, bytes: Int64)?
  /// The baseline's slices so far: when the first began, and the last one's rate.
  private var baselineStart: UInt64?
  private var lastSliceRate: Double?
  /// When growth is tried again, after a step back; and the delay after the next one.
  private var nextProbe: UInt64?
  private var probeDelay: UInt64?

  package init(mode: Mode, rateCap: Double? = nil) {
    self.mode = mode
    self.rateCap = rateCap
    if case .fixed(let count) = mode { target = max(1, count) }
  }

  package static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.mode == rhs.mode && lhs.target == rhs.target && lhs.growing == rhs.growing
      && lhs.previousRate == rhs.previousRate && lhs.previousTarget == rhs.previousTarget
      && lhs.nextProbe == rhs.nextProbe && lhs.rateCap == rhs.rateCap
      && lhs.serverLimit?.count == rhs.serverLimit?.count
      && lhs.serverLimit?.until == rhs.serverLimit?.until
  }

  /// The server declined a connection while `working` others delivered: no more than that
  /// (never fewer than one) are added until a while later, and automatic mode stops growing
  /// until then. `live`: the other connections still open, delivering or not yet answered;
  /// they go on (the server may take them), so the target does not drop below them.
  package mutating func connectionDeclined(working: Int, live: Int, now: UInt64) {
    let delay = declineDelay ?? reprobeDelay
    declineDelay = min(longestReprobeDelay, delay &* 2)
    let limit = max(1, min(limit(at: now) ?? Int.max, working))
    serverLimit = (limit, now &+ delay)
    if case .automatic = mode {
      growing = false
      target = min(target, max(limit, live))
      nextProbe = now &+ delay
    }
  }

  /// The server's limit in force at `now`, if any.
  package func limit(at now: UInt64) -> Int? {
    serverLimit.flatMap { now < $0.until ? $0.count : nil }
  }

  /// The rate limit changed while the download runs (a limit shared with other downloads, set
  /// from elsewhere). A higher one, or none, may make connections useful that the old one made
  /// useless, so growth is tried again `liftSettle` after it, and a later step back waits
  /// `reprobeDelay` again. A lower one only stops growth when it is reached.
  package mutating func changeRateCap(to cap: Double?, now: UInt64) {
    let raised = rateCap.map { old in cap.map { $0 > old } ?? true } ?? false
    rateCap = cap
    guard raised, !growing, case .automatic = mode else { return }
    nextProbe = now &+ liftSettle
    probeDelay = nil
  }

  /// The number of connections wanted now.
  /// - Parameters:
  ///   - bytes: total bytes received so far in this session.
  ///   - open: connections currently transferring, their response begun (a window starts only
  ///     once all wanted ones are: a connection still being made would make a step look useless).
  ///   - rangesSupported: whether the server has served a range; without, one connection.
  ///   - maximumUseful: how many connections the bytes left can keep busy.
  ///   - answerLatency: how long the last request took to be answered, if known.
  package mutating func update(
    now: UInt64, bytes: Int64, open: Int, rangesSupported: Bool, maximumUseful: Int,
    answerLatency: UInt64? = nil
  ) -> Decision {
    guard rangesSupported else { return Decision(wanted: 1) }
    let useful = max(1, min(maximumUseful, limit(at: now) ?? Int.max))
    let hold = Decision(wanted: min(target, useful))
    switch mode {
    case .fixed(let count):
      return Decision(wanted: min(max(1, count), useful))
    case .automatic(let cap):
      // At the cap, the last step is still judged.
      if !growing {
        guard let probe = nextProbe, now >= probe, useful > target, open >= hold.wanted else { return hold }
        // Tried again from a fresh baseline of the connections left.
        nextProbe = nil
        growing = true
        previousRate = nil
        baselineStart = nil
        lastSliceRate = nil
        windowStart = nil
      }
      guard open >= hold.wanted, let start = windowStart else {
        if open >= hold.wanted, windowStart == nil { windowStart = (now, bytes) }
        return hold
      }
      let elapsed = now > start.time ? now - start.time : 0
      guard elapsed > 0, elapsed >= (previousRate == nil ? baselineSlice : earlyWindow) else { return hold }
      let rate = Double(bytes - start.bytes) / (Double(elapsed) / 1e9)
      guard let previousRate else {
        return baseline(rate, began: start.time, now: now, bytes: bytes, open: open, useful: useful, cap: cap)
      }
      let stepWindow = answerLatency.map { max(shortestWindow, answerLatencies &* $0) } ?? window
      if elapsed < stepWindow, rate < previousRate * earlyGain { return hold }
      if rate < previousRate * minimumGain {
        growing = false
        target = previousTarget
        let delay = probeDelay ?? reprobeDelay
        nextProbe = now &+ delay
        probeDelay = min(longestReprobeDelay, delay &* 2)
        return Decision(wanted: min(target, useful), stepBack: true)
      }
      return step(from: rate, open: open, useful: useful, cap: cap)
    }
  }

  /// One slice of the baseline ended at `rate`: another slice while the connections still
  /// accelerate, else the first step.
  private mutating func baseline(
    _ rate: Double, began sliceStart: UInt64, now: UInt64, bytes: Int64, open: Int, useful: Int, cap: Int
  ) -> Decision {
    let began = baselineStart ?? sliceStart
    baselineStart = began
    let steady = lastSliceRate.map { rate < $0 * minimumGain } ?? false
    if steady || now &- began >= window {
      // The faster of the last two slices: an understated baseline would make a step that
      // brings nothing look like a gain.
      return step(from: max(rate, lastSliceRate ?? 0), open: open, useful: useful, cap: cap)
    }
    lastSliceRate = rate
    windowStart = (now, bytes)
    return Decision(wanted: min(target, useful))
  }

  /// The count after a step that paid off (or the baseline) measured `rate`.
  private mutating func step(from rate: Double, open: Int, useful: Int, cap: Int) -> Decision {
    windowStart = nil
    if let rateCap, rate >= rateCap * 0.9 {
      // The limit is reached: more connections would only share it.
      growing = false
      return Decision(wanted: min(target, useful))
    }
    var next = min(cap, target * growthFactor)
    if let rateCap, rate > 0 {
      // As many as the limit needs at the rate each connection shows, and one more.
      let needed = Int((rateCap / (rate / Double(max(1, open)))).rounded(.up)) + 1
      next = min(next, max(target + 1, needed))
    }
    guard min(next, useful) > min(target, useful) else {
      // No connection to add (the cap, or the bytes left): there is no step to measure.
      growing = false
      return Decision(wanted: min(target, useful))
    }
    previousRate = rate
    previousTarget = target
    earlyGain = max(minimumGain, earlyGainShare * Double(next) / Double(target))
    target = next
    return Decision(wanted: min(target, useful))
  }
}
