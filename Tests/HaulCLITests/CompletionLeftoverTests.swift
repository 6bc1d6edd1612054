import Foundation
import HaulTestSupport
import Testing

/// Checks that a finished download left nothing but the file. A stale sidecar is the known engine
/// bug above (intermittent), so it is recorded as a known issue rather than a failure.
func expectOnlyResult(in directory: TemporaryDirectory, name: String, sourceLocation: SourceLocation = #_sourceLocation) {
  #expect(!directory.exists(name + ".part"), "a finished download left \(name).part", sourceLocation: sourceLocation)
  withKnownIssue("engine: a queued checkpoint can rewrite NAME.haul after completion", isIntermittent: true) {
    #expect(
      !directory.exists(name + ".haul") && !directory.exists(name + ".haul.tmp"),
      "a finished download left its sidecar", sourceLocation: sourceLocation)
  }
}
