import Testing

@testable import HaulCore

/// Progress means holding more than ever before; restarts never count as progress and run out.
@Suite struct RetryBudgetTests {
  static func budget(attempts: Int = 3, restarts: Int = 2, held: Int64 = 0) -> RetryBudget {
    RetryBudget(
      policy: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: attempts),
      maxRestarts: restarts,
      held: held)
  }

  static let cut = HaulError(.network, "the connection broke")

  /// `held` after each failed round → retry (its attempt number) or give up (nil).
  static let rounds: [(attempts: Int, held: [Int64], expected: [Int?])] = [
    // No progress: 3 attempts, the third gives up.
    (3, [0, 0, 0], [1, 2, nil]),
    // Growth resets the count...
    (3, [10, 20, 30, 40], [1, 1, 1, 1]),
    // ...but only past the most ever held: falling back (a restart) and regrowing does not.
    (3, [10, 0, 5, 10, 11], [1, 2, nil, nil, nil]),
    (4, [10, 0, 5, 10, 11], [1, 2, 3, nil, nil]),
    // 0 means a single attempt; Int.max no limit.
    (0, [0], [nil]),
    (1, [0], [nil]),
    (.max, [0, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6]),
  ]

  @Test(arguments: 0..<rounds.count)
  func attemptsWithoutProgress(_ index: Int) {
    let row = Self.rounds[index]
    var budget = Self.budget(attempts: row.attempts)
    var results: [Int?] = []
    for held in row.held {
      guard
        case .retry(let notice) = budget.roundFailed(
          Self.cut, retryAfter: nil, held: held, unreached: false, jitter: 0.5)
      else {
        results.append(nil)
        break
      }
      results.append(notice.attempt)
    }
    #expect(results == Array(row.expected.prefix(results.count)))
    #expect(
      results.count == row.expected.firstIndex(where: { $0 == nil }).map { $0 + 1 } ?? row.expected.count)
  }

  @Test func givingUpSaysHowManyAttemptsAndWhatTheServerDid() {
    var budget = Self.budget(attempts: 1)
    guard
      case .giveUp(let single) = budget.roundFailed(
        Self.cut, retryAfter: nil, held: 0, unreached: false, jitter: 0)
    else {
      Issue.record("no give-up")
      return
    }
    #expect(single.message == "the connection broke (gave up after 1 attempt without progress)")
    #expect(single.category == .network)

    var restarted = Self.budget(attempts: 2)
    _ = restarted.roundFailed(Self.cut, retryAfter: nil, held: 1 << 20, unreached: false, jitter: 0)
    #expect(restarted.restarted("the server sent the whole file") == nil)
    guard
      case .giveUp(let error) = restarted.roundFailed(
        Self.cut, retryAfter: nil, held: 1 << 20, unreached: false, jitter: 0),
      case .giveUp = restarted.roundFailed(
        Self.cut, retryAfter: nil, held: 1 << 20, unreached: false, jitter: 0)
    else {
      Issue.record("no give-up")
      return
    }
    #expect(error.message.contains("gave up after 2 attempts without progress"))
    #expect(error.message.contains("started over from byte 0 once and never sent more than 1.00 MiB"))
    #expect(error.hint?.contains("resumes from 1.00 MiB") == true)

    // A server that cannot resume (no ranges, or no size): no resume is promised.
    var stuck = Self.budget(attempts: 1)
    guard
      case .giveUp(let notResumable) = stuck.roundFailed(
        Self.cut, retryAfter: nil, held: 1 << 20, unreached: false, jitter: 0,
        cannotResume: "the server cannot resume (it sent no size)")
    else {
      Issue.record("no give-up")
      return
    }
    #expect(
      notResumable.hint
        == LibraryWording.tryAgainLater + "; the server cannot resume (it sent no size), so it starts over")
  }

  @Test func restartsAreCappedWithTheLastFailuresCategory() {
    var budget = Self.budget(restarts: 2)
    #expect(budget.restarted("r") == nil)
    #expect(budget.restarted("r") == nil)
    let inconsistent = budget.restarted("the server sent bytes from 5 when asked for bytes from 0")
    #expect(inconsistent?.category == .protocol)
    #expect(
      inconsistent?.message.hasPrefix("gave up after 2 restarts from byte 0: the server sent bytes from 5")
        == true)

    var cut = Self.budget(restarts: 0)
    _ = cut.roundFailed(Self.cut, retryAfter: nil, held: 100, unreached: false, jitter: 0)
    let error = cut.restarted("the server sent the whole file")
    #expect(error?.category == .network)
    #expect(error?.message.contains("each attempt ended early (last: the connection broke)") == true)
  }

  @Test func aServerNeverReachedGetsAShortLeash() {
    var budget = Self.budget(attempts: 10)
    var delays: [Double] = []
    var attempts = 0
    while case .retry(let notice) = budget.roundFailed(
      HaulError(.network, "cannot connect"), retryAfter: nil, held: 0, unreached: true, jitter: 1)
    {
      delays.append(notice.delay)
      attempts += 1
      #expect(notice.maxAttempts == RetryBudget.unreachedAttempts)
    }
    #expect(attempts == RetryBudget.unreachedAttempts - 1)
    #expect(delays.allSatisfy { $0 <= RetryBudget.unreachedDelayCap })
    // Once a server answered, the full budget applies.
    var contacted = Self.budget(attempts: 10)
    contacted.contacted = true
    guard
      case .retry(let notice) = contacted.roundFailed(
        HaulError(.network, "cannot connect"), retryAfter: nil, held: 0, unreached: true, jitter: 1)
    else {
      Issue.record("no retry")
      return
    }
    #expect(notice.maxAttempts == 10 && notice.delay == 1)
  }
}
