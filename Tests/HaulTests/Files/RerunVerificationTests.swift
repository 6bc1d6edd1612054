import Testing

@testable import Haul

/// What a rerun does with a finished file before it reports it complete.
@Suite struct RerunVerificationTests {
  static let good = String(repeating: "1", count: 64)
  static let bad = String(repeating: "2", count: 64)
  static let status = FileStatus(size: 10, modified: 100, changed: 150)
  static let sealed = FinishedFileSeal(size: 10, modified: 100, changedBy: 200, sha256: good)
  static let checksum = RerunVerification.Expected(
    algorithm: .sha256, hex: good, source: "the expected checksum")
  static let resized = FileStatus(size: 11, modified: 100, changed: 150)
  static let md5 = RerunVerification.Expected(
    algorithm: .md5, hex: String(repeating: "a", count: 32), source: "the server's digest")

  typealias Plan = RerunVerification.Plan

  @Test(
    arguments: [
      // Untouched and sealed: trusted without a read.
      (status, 10, sealed, [], Plan.trust(sha256: good)),
      // A record from before seals: its size only, as before.
      (status, 10, nil, [], .trust(sha256: nil)),
      // Another size: modified, nothing to hash.
      (resized, 10, sealed, [], .modified("holds 11 bytes, not the 10")),
      (resized, 10, nil, [checksum], .modified("holds 11 bytes, not the 10")),
      // Its times changed (a write in place, touch, chmod): hash against the sealed SHA-256.
      (FileStatus(size: 10, modified: 101, changed: 150), 10, sealed, [], .hash([.sha256])),
      (FileStatus(size: 10, modified: 100, changed: 300), 10, sealed, [], .hash([.sha256])),
      // ... unless none was recorded.
      (
        FileStatus(size: 10, modified: 101, changed: 300), 10,
        FinishedFileSeal(size: 10, modified: 100, changedBy: 200), [], .modified("no SHA-256")
      ),
      // A checksum or a server digest: always hashed, with SHA-256 for the result.
      (status, 10, sealed, [checksum], .hash([.sha256])),
      (status, 10, sealed, [md5], .hash([.md5, .sha256])),
      (status, 10, nil, [md5], .hash([.md5, .sha256])),
    ] as [(FileStatus, Int64?, FinishedFileSeal?, [RerunVerification.Expected], Plan)])
  func plans(
    status: FileStatus, recordedSize: Int64?, seal: FinishedFileSeal?, expected: [RerunVerification.Expected],
    plan: Plan
  ) {
    let found = RerunVerification.plan(
      path: "f", status: status, recordedSize: recordedSize, seal: seal, expected: expected)
    switch (found, plan) {
    case (.modified(let message), .modified(let word)):
      #expect(message.hasPrefix("f ") && message.contains(word), "\(message)")
    default:
      #expect(found == plan)
    }
  }

  typealias Verdict = RerunVerification.Verdict

  @Test(
    arguments: [
      // Bytes as sealed, times changed: complete, and sealed again so the next rerun reads nothing.
      (
        [.sha256: good], FileStatus(size: 10, modified: 101, changed: 300), sealed, [],
        Verdict.complete(sha256: good, reseal: true)
      ),
      // Bytes changed.
      (
        [.sha256: bad], FileStatus(size: 10, modified: 101, changed: 300), sealed, [],
        .modified("SHA-256 is 2222")
      ),
      // The expected checksum decides, whatever the seal says.
      ([.sha256: good], status, sealed, [checksum], .complete(sha256: good, reseal: false)),
      ([.sha256: bad], status, nil, [checksum], .modified("does not match the expected checksum")),
      ([.sha256: good, .md5: bad], status, sealed, [md5], .modified("the server's digest: md5")),
      // A record without a seal that matches its checksum gets one.
      ([.sha256: good], status, nil, [checksum], .complete(sha256: good, reseal: true)),
    ]
      as [(
        [Checksum.Algorithm: String], FileStatus, FinishedFileSeal?, [RerunVerification.Expected], Verdict
      )])
  func verdicts(
    digests: [Checksum.Algorithm: String], status: FileStatus, seal: FinishedFileSeal?,
    expected: [RerunVerification.Expected], verdict: Verdict
  ) {
    let found = RerunVerification.verdict(
      path: "f", digests: digests, status: status, seal: seal, expected: expected)
    switch (found, verdict) {
    case (.modified(let message), .modified(let words)):
      #expect(message.hasPrefix("f ") && message.contains(words), "\(message)")
    default:
      #expect(found == verdict)
    }
  }
}
