#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A rerun of a finished download verifies what it reports (`RerunVerification`): on the
/// caller's task, before any request, or on the event thread when a response named the file.
extension DownloadRun {
  /// Checks the finished file at `path` that `record` says this URL made; returns its SHA-256
  /// when known. A file whose bytes changed throws `.integrity`, and is left as it is.
  func verifyFinished(_ path: String, record: ResumeState) throws(HaulError) -> String? {
    let file: FinishedFile
    do { file = try FinishedFile(path: path) } catch { throw error.haulError }
    let expected = expectedDigests(announced: record.digests ?? [:])
    let plan = RerunVerification.plan(
      path: path, status: file.status, recordedSize: record.totalBytes, seal: file.seal, expected: expected)
    switch plan {
    case .trust(let sha256):
      return sha256
    case .modified(let message):
      throw Self.modifiedError(message)
    case .hash(let algorithms):
      let digests = try file.digests(algorithms)
      switch RerunVerification.verdict(
        path: path, digests: digests, status: file.status, seal: file.seal, expected: expected)
      {
      case .complete(let sha256, let reseal):
        if reseal, let sha256 { file.reseal(sha256: sha256) }
        return sha256
      case .modified(let message):
        throw Self.modifiedError(message)
      }
    }
  }

  /// A stop that kept what it held (`cancel(keepPartial: true)`, Ctrl-C): how a next run goes
  /// on. It starts over when the server cannot resume (it never offered byte ranges, or sent
  /// no size), and says so instead of promising a resume.
  func stoppedError(_ state: ResumeState) -> HaulError {
    let (obstacle, streamed) = decide { machine, _ in (machine.resumeObstacle, machine.streamed) }
    if streamed, let obstacle {
      return HaulError(
        .interrupted,
        "stopped after \(ByteQuantity.format(state.heldBytes)); \(obstacle), so \(LibraryWording.newDownloadStartsOver)"
      )
    }
    guard state.heldBytes > 0 else { return HaulError(.interrupted, "stopped before any byte was saved") }
    let saved = ByteQuantity.format(state.heldBytes) + " saved"
    guard let obstacle else {
      return HaulError(.interrupted, "stopped; " + saved, hint: LibraryWording.newDownloadResumes)
    }
    return HaulError(
      .interrupted, "stopped; \(saved), but \(obstacle), so \(LibraryWording.newDownloadStartsOver)")
  }

  static func modifiedError(_ message: String) -> HaulError {
    HaulError(.integrity, message, hint: "it was left as it is; " + LibraryWording.overwriteToFetchAgain)
  }

  /// The digests the finished bytes must have: the expected checksum, then the server's.
  func expectedDigests(announced: [String: String]) -> [RerunVerification.Expected] {
    var expected: [RerunVerification.Expected] = []
    if let checksum = options.checksum {
      expected.append(
        .init(algorithm: checksum.algorithm, hex: checksum.hex, source: "the expected checksum"))
    }
    for (name, hex) in announced.sorted(by: { $0.key < $1.key }) {
      if let algorithm = Checksum.Algorithm(rawValue: name) {
        expected.append(.init(algorithm: algorithm, hex: hex, source: "the server's digest"))
      }
    }
    return expected
  }
}
