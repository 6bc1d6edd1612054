import Foundation
import Testing

@testable import HaulCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `InterruptHandler`: once it exists, a signal reaches it, in every handler a process makes.
@Suite("interrupt handler")
struct InterruptHandlerTests {
  /// A signal sent the moment `init` returns is handled. It used to return before libdispatch
  /// had registered its source, with the signal already ignored, so the main thread (which
  /// blocks no signal) dropped it; and every handler after the first in a process stayed deaf,
  /// since libdispatch installs the handler that forwards the signal only once per signal.
  /// SIGUSR1, not a stop signal: nothing else in the test process sends or catches it.
  @Test func aSignalRightAfterInitIsNeverLost() async {
    for trial in 0..<50 {
      let (stream, continuation) = AsyncStream<Void>.makeStream()
      let handler = InterruptHandler(signals: [SIGUSR1], first: { continuation.yield() }, again: {})
      kill(getpid(), SIGUSR1)
      // A lost signal never comes: the bound only ends the wait for it.
      let bound = Task {
        try await Task.sleep(for: .seconds(20))
        continuation.finish()
      }
      var iterator = stream.makeAsyncIterator()
      let handled = await iterator.next() != nil
      bound.cancel()
      handler.stop()
      #expect(handled, "trial \(trial): the signal was lost")
      if !handled { break }
    }
  }
}
