import Foundation
import Haul
import HaulTestSupport
import Testing

/// Checks that a finished download left nothing but the file: no `.part`, no state file, and
/// none of the state file's temporary copies (`SafeFile.isTemporaryName`).
func expectOnlyResult(
  in directory: TemporaryDirectory, name: String, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    !directory.exists(name + ".part"), "a finished download left \(name).part", sourceLocation: sourceLocation
  )
  let state = directory.file(name + ".haul").path
  let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.url.path)) ?? []
  let left = names.filter { $0 == name + ".haul" || SafeFile.isTemporaryName($0, beside: state) }
  #expect(left.isEmpty, "a finished download left its state file: \(left)", sourceLocation: sourceLocation)
}
