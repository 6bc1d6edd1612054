import Foundation
import HaulTestSupport
import Testing

/// Checks that a finished download left nothing but the file (no `.part`, no sidecar).
func expectOnlyResult(
  in directory: TemporaryDirectory, name: String, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    !directory.exists(name + ".part"), "a finished download left \(name).part", sourceLocation: sourceLocation
  )
  #expect(
    !directory.exists(name + ".haul") && !directory.exists(name + ".haul.tmp"),
    "a finished download left its sidecar", sourceLocation: sourceLocation)
}
