import Testing

@testable import Haul

@Suite struct LeaseTimerTests {
  @Test func writingStopsThreeQuartersOfALeaseAfterTheLastProvenRenewalWasSent() {
    var timer = LeaseTimer(lease: 40, progressInterval: 0.5, claimSentAt: 100)
    #expect(timer.writableUntil == 130)
    #expect(!timer.mustStopWriting(now: 129.9))
    #expect(timer.mustStopWriting(now: 130))
    // A renewal counts from when it was sent, not from when its answer came back.
    timer.sent(at: 110)
    timer.renewed(sentAt: 110)
    #expect(timer.writableUntil == 140)
    // A late answer to an older renewal never moves the limit back.
    timer.renewed(sentAt: 105)
    #expect(timer.writableUntil == 140)
  }

  @Test func renewalsCarryProgressAtMostEveryIntervalAndKeepAliveWithout() {
    var timer = LeaseTimer(lease: 40, progressInterval: 0.5, claimSentAt: 0)
    let table: [(now: Double, changed: Bool, due: Bool)] = [
      (0.2, true, false),  // too soon after the claim
      (0.5, true, true),
      (5, false, false),  // nothing new, the lease is fresh
      (10, false, true),  // a quarter lease since the last proven renewal
    ]
    for row in table {
      #expect(timer.renewalDue(now: row.now, progressChanged: row.changed) == row.due, "\(row)")
    }
    timer.sent(at: 10)
    #expect(!timer.renewalDue(now: 10.2, progressChanged: false))
    // That renewal failed (no `renewed`): keep trying, at the progress interval.
    #expect(timer.renewalDue(now: 10.5, progressChanged: false))
  }
}

@Suite struct FleetDispositionTests {
  private let result = DownloadResult(
    file: .init(fileURLWithPath: "/f"), totalBytes: 1, bytesReceived: 1, resumedFrom: 0,
    finalURL: "http://h/f",
    wasAlreadyComplete: false, remoteChanged: false, duration: 1)
  private let interrupted = HaulError(.interrupted, "stopped")
  private let network = HaulError(.network, "connection refused")
  private let notFound = HaulError(.server, "404")
  private let busy = HaulError(
    .generic, "another haul process is downloading /x/f", underlying: TargetInUse(here: false))

  @Test func everyEndingHasOneAnswer() {
    typealias Row = (Result<DownloadResult, HaulError>, FleetDisposition.Stop?, Int, FleetDisposition)
    let table: [Row] = [
      (.success(result), nil, 1, .complete),
      (.success(result), .drain, 1, .complete),  // finished before the drain reached it
      (.success(result), .leaseLost, 1, .abandon),  // someone else's job now: record nothing
      (.failure(interrupted), .drain, 1, .release(delay: 0, countsAsAttempt: false, reason: nil)),
      (.failure(interrupted), .pauseRequested, 1, .release(delay: 0, countsAsAttempt: false, reason: nil)),
      (.failure(interrupted), .removeRequested, 1, .release(delay: 0, countsAsAttempt: false, reason: nil)),
      (.failure(interrupted), .leaseLost, 1, .abandon),
      (.failure(network), .leaseLost, 1, .abandon),
      (.failure(busy), nil, 1, .release(delay: 5, countsAsAttempt: false, reason: busy)),
      (.failure(network), nil, 5, .fail(network)),
      (.failure(notFound), nil, 1, .fail(notFound)),
    ]
    for (outcome, stop, attempts, expected) in table {
      let decided = FleetDisposition.decide(
        outcome: outcome, stop: stop, attempts: attempts, maxAttempts: 5, jitter: 0.5)
      #expect(decided == expected, "\(outcome) \(String(describing: stop))")
    }
  }

  @Test func transientFailuresBackOffUpToALimit() {
    let decided = FleetDisposition.decide(
      outcome: .failure(network), stop: nil, attempts: 2, maxAttempts: 5, jitter: 0.5)
    #expect(decided == .release(delay: 30, countsAsAttempt: true, reason: network))
    #expect(FleetDisposition.backoff(attempts: 1, jitter: 0) == 12)
    #expect(abs(FleetDisposition.backoff(attempts: 30, jitter: 1) - 1080) < 1e-9)
    let full = HaulError(.fileSystem, "the disk is full", underlying: SystemError("write", errno: 28))
    #expect(FleetDisposition.isTransient(full))
    #expect(!FleetDisposition.isTransient(HaulError(.fileSystem, "permission denied")))
  }
}
