import Synchronization

@testable import HaulCLI

/// Collects what the command writes, for assertions.
final class OutputCapture: Sendable {
  private let streams = Mutex((stdout: "", stderr: "", writes: 0))

  var stdout: String { streams.withLock { $0.stdout } }
  var stderr: String { streams.withLock { $0.stderr } }
  /// Calls that wrote to stderr (a frame drawn in one write cannot flicker).
  var writes: Int { streams.withLock { $0.writes } }

  var sink: OutputSink {
    OutputSink(
      stdout: { text in self.streams.withLock { $0.stdout += text } },
      stderr: { text in
        self.streams.withLock {
          $0.stderr += text
          $0.writes += 1
        }
      })
  }
}
