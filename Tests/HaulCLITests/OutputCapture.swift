import Synchronization

@testable import HaulCLI

/// Collects what the command writes, for assertions.
final class OutputCapture: Sendable {
  private let streams = Mutex((stdout: "", stderr: ""))

  var stdout: String { streams.withLock { $0.stdout } }
  var stderr: String { streams.withLock { $0.stderr } }

  var sink: OutputSink {
    OutputSink(
      stdout: { text in self.streams.withLock { $0.stdout += text } },
      stderr: { text in self.streams.withLock { $0.stderr += text } })
  }
}
