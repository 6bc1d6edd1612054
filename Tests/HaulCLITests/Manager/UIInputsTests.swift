import Foundation
import Testing

@testable import HaulCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `UIInputs`' signal sources: once `start` returns, a signal reaches them, in every view a
/// process makes (as `InterruptHandlerTests` checks for the download's handler).
@Suite("haul ui inputs")
struct UIInputsTests {
  /// A resize sent the moment `start` returns arrives as `.resized`. `start` used to ignore the
  /// signal before libdispatch had registered its source (then a thread that blocks no signal
  /// dropped it), and ignoring it again in a second view kept libdispatch's forwarding handler
  /// out for good. SIGWINCH: its default action is to be ignored, so a lost one harms nothing.
  @Test func aResizeRightAfterStartIsNeverLost() async {
    for trial in 0..<10 {
      let inputs = UIInputs()
      inputs.start(tick: .seconds(3600))
      kill(getpid(), SIGWINCH)
      // A lost signal never comes: the bound only ends the wait for it.
      let bound = Task {
        try await Task.sleep(for: .seconds(20))
        inputs.requestStop()
      }
      var resized = false
      for await input in inputs.stream {
        if case .resized = input {
          resized = true
          break
        }
        if case .stop = input { break }
      }
      bound.cancel()
      inputs.stop()
      #expect(resized, "trial \(trial): the signal was lost")
      if !resized { break }
    }
  }
}
