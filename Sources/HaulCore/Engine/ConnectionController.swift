/// How many connections a download should use, decided from the throughput it measures.
///
/// Automatic mode starts with one connection; once the server has shown it serves ranges, it
/// multiplies the count while each step raises total throughput by at least `minimumGain`,
/// and holds when a step does not (or the cap, or the bytes left, say stop). Pure: the engine
/// feeds it byte counts and clock readings.
package struct ConnectionController: Sendable, Equatable {
  package enum Mode: Sendable, Equatable {
    case fixed(Int)
    case automatic(cap: Int)
  }

  package let mode: Mode
  /// The download's own rate limit (bytes per second), if any: connections that could only
  /// share it are not added.
  package var rateCap: Double?
  /// Length of one measurement, nanoseconds.
  package var window: UInt64 = 200_000_000
  /// Length of the first one: one connection alone, whose rate is only the baseline the
  /// next step is compared with (the first step is taken whatever it shows), so it need not
  /// wait as long. A 1 s download loses less of its time to the ramp. A reading this short
  /// may catch a burst and overstate the baseline; that only makes the next gain look smaller,
  /// never a step that does not help look like one.
  package var baselineWindow: UInt64 = 50_000_000
  /// The shortest window after which a clear gain (`earlyGainShare`) is acted on.
  package var firstWindow: UInt64 = 100_000_000
  package var growthFactor = 4
  package var minimumGain = 1.15
  /// A step whose connections already deliver this share of a linear gain after
  /// `firstWindow` (four connections, twice the rate of one) is taken then, without waiting
  /// for the whole window. New connections on a real network start slowly (TCP slow start),
  /// so an early reading understates what they bring; one this clear would pass the
  /// `minimumGain` test at the end of the window too. Shorter readings are noisy (a paced
  /// server sends in bursts), hence half, not all, of the linear gain.
  package var earlyGainShare = 0.5

  package private(set) var target = 1
  /// The rate an early step needs, as a multiple of the previous one: the share of a linear
  /// gain from the last step (1 → 4 connections: 2×).
  private var earlyGain = 4.0
  private var growing = true
  private var previousRate: Double?
  private var windowStart: (time: UInt64, bytes: Int64)?

  package init(mode: Mode, rateCap: Double? = nil) {
    self.mode = mode
    self.rateCap = rateCap
    if case .fixed(let count) = mode { target = max(1, count) }
  }

  package static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.mode == rhs.mode && lhs.target == rhs.target && lhs.growing == rhs.growing
      && lhs.previousRate == rhs.previousRate
  }

  /// The number of connections wanted now.
  /// - Parameters:
  ///   - bytes: total bytes received so far in this session.
  ///   - open: connections currently transferring, their response begun (a window starts only
  ///     once all wanted ones are: a connection still being made would make a step look useless).
  ///   - rangesSupported: whether the server has served a range; without, one connection.
  ///   - maximumUseful: how many connections the bytes left can keep busy.
  package mutating func update(
    now: UInt64, bytes: Int64, open: Int, rangesSupported: Bool, maximumUseful: Int
  ) -> Int {
    guard rangesSupported else { return 1 }
    let useful = max(1, maximumUseful)
    switch mode {
    case .fixed(let count):
      return min(max(1, count), useful)
    case .automatic(let cap):
      guard growing, target < cap else { return min(target, useful) }
      guard open >= target, let start = windowStart else {
        if open >= target, windowStart == nil { windowStart = (now, bytes) }
        return min(target, useful)
      }
      let elapsed = now > start.time ? now - start.time : 0
      let shortest = previousRate == nil ? baselineWindow : firstWindow
      guard elapsed > 0, elapsed >= shortest else { return min(target, useful) }
      let rate = Double(bytes - start.bytes) / (Double(elapsed) / 1e9)
      if let previousRate, elapsed < window, rate < previousRate * earlyGain {
        return min(target, useful)
      }
      if let previousRate, rate < previousRate * minimumGain {
        growing = false
      } else if let rateCap, rate >= rateCap * 0.9 {
        // The limit is reached: more connections would only share it.
        growing = false
      } else {
        var next = min(cap, target * growthFactor)
        if let rateCap, rate > 0 {
          // As many as the limit needs at the rate each connection shows, and one more.
          let needed = Int((rateCap / (rate / Double(max(1, open)))).rounded(.up)) + 1
          next = min(next, max(target + 1, needed))
        }
        previousRate = rate
        earlyGain = max(minimumGain, earlyGainShare * Double(next) / Double(target))
        target = next
      }
      windowStart = nil
      return min(target, useful)
    }
  }
}
