import Testing

@testable import HaulCore

/// Which held bytes must be proven by the first response (`PendingProof`), and whether a later
/// run could resume what is held (`DownloadMachine.resumeObstacle`).
@Suite struct PendingProofTests {
  static let url = "http://h/new"
  static let held = [ByteRange(start: 0, end: 10)]

  @Test(arguments: [
    (StartPoint.unnamed, nil),
    (.opened(ResumeState(url: url, ranges: held)), nil),
    (.opened(ResumeState(url: "http://h/old", ranges: held)), PendingProof.movedFrom("http://h/old")),
    (.opened(ResumeState(url: "http://h/old", ranges: [])), nil),
    (.foreignPartial(ResumeState(url: url, ranges: held)), .foreignPartial),
    (.foreignPartial(ResumeState(url: url, ranges: [])), nil),
    (.finished(ResumeState(url: "http://h/old", ranges: held)), nil),
  ])
  func proofNeeded(start: StartPoint, expected: PendingProof?) {
    #expect(PendingProof(start, recordedURL: Self.url) == expected)
  }

  /// Each proof fails with its own words, the held bytes kept (exit 3); only a foreign partial
  /// is marked `UnprovenPartial`, which the engine uses to leave the user's file in place.
  @Test func failuresKeepTheBytes() {
    let moved = PendingProof.movedFrom("http://h/old").failure("why")
    #expect(
      moved.category == .fileSystem && moved.message.contains("http://h/old") && moved.message.contains("why")
    )
    #expect(!(moved.underlying is UnprovenPartial))
    let foreign = PendingProof.foreignPartial.failure("why")
    #expect(foreign.category == .fileSystem && foreign.message.contains("why"))
    #expect(foreign.underlying is UnprovenPartial)
  }

  static func machine(_ start: StartPoint) -> DownloadMachine {
    var machine = DownloadMachine(
      DownloadMachine.Configuration(
        recordedURL: url, fixedConnections: 1,
        retry: RetryPolicy(baseDelay: 1, maxDelay: 8, maxAttemptsWithoutProgress: 3)))
    _ = machine.begin(start, now: 0)
    return machine
  }

  /// A later run resumes only from a server that serves ranges of a known size, and never
  /// into a stream.
  @Test func resumeObstacle() {
    #expect(Self.machine(.stream).resumeObstacle?.hasPrefix("a stream is written as it comes") == true)
    let sized = ResumeState(url: Self.url, totalBytes: 100, ranges: Self.held)
    #expect(Self.machine(.opened(sized)).resumeObstacle == nil)
    let unsized = ResumeState(url: Self.url, ranges: Self.held)
    #expect(
      Self.machine(.opened(unsized)).resumeObstacle
        == "the server cannot resume (it does not serve byte ranges)")
  }
}
