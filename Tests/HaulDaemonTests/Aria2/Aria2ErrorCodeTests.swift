import Haul
import Testing

@testable import HaulDaemon

/// `tellStatus`'s `errorCode`: aria2's exit code closest to how a download ended.
@Suite struct Aria2ErrorCodeTests {
  static let exists = "/d/a.iso already exists and was not downloaded by haul from this URL"
  static let full = "the download needs 1.00 GiB but only 10.0 MiB are free on the target's file system"

  static let cases: [(DownloadState, HaulError?, String)] = [
    (.complete, nil, "0"),
    (.removed, nil, "31"),
    (.failed, nil, "1"),
    (.failed, HaulError(.network, "the connection broke"), "6"),
    (.failed, HaulError(.server, "the server answered 404 Not Found"), "3"),
    (.failed, HaulError(.integrity, "the checksum does not match"), "32"),
    (.failed, HaulError(.fileSystem, exists, underlying: TargetExists()), "13"),
    (
      .failed, HaulError(.fileSystem, full, underlying: InsufficientSpace(needed: 1 << 30, free: 10 << 20)),
      "9"
    ),
    (.failed, HaulError(.fileSystem, "permission denied: /d/a.iso"), "17"),
    (.failed, HaulError(.fileSystem, "w", underlying: SystemError("pwrite", errno: 28)), "9"),  // ENOSPC
    (.failed, HaulError(.fileSystem, "w", underlying: SystemError("pwrite", errno: 122)), "9"),  // EDQUOT
    (.failed, HaulError(.fileSystem, "w", underlying: SystemError("pwrite", errno: 13)), "17"),  // EACCES
  ]

  @Test(arguments: 0..<cases.count)
  func closestCode(_ index: Int) {
    let (state, error, code) = Self.cases[index]
    #expect(Aria2Status.errorCode(state: state, error: error) == code, "\(String(describing: error))")
  }

  /// The code follows the cause the engine gave, not the words of the message: the same words
  /// without the cause are any other I/O error, the cause with other words keeps its code.
  @Test func theCauseNotTheWords() {
    func code(_ error: HaulError) -> String { Aria2Status.errorCode(state: .failed, error: error) }
    #expect(code(HaulError(.fileSystem, Self.exists)) == "17")
    #expect(code(HaulError(.fileSystem, Self.full)) == "17")
    #expect(code(HaulError(.fileSystem, "the target is taken", underlying: TargetExists())) == "13")
    #expect(code(HaulError(.fileSystem, "no room", underlying: InsufficientSpace(needed: 2, free: 1))) == "9")
  }

  /// A failure reaches `tellStatus` through the manager's record (`StoredError`), which keeps
  /// the cause in memory.
  @Test func theCauseSurvivesTheManagersRecord() {
    let stored = StoredError(HaulError(.fileSystem, "the target is taken", underlying: TargetExists()))
    #expect(Aria2Status.errorCode(state: .failed, error: stored.haulError) == "13")
  }
}
