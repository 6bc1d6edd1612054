import Foundation
import HaulCore
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// A response that names the target (a directory destination) has it opened off the transport's
/// thread: the body waits, the transfer paused, and is offered again once the file is open.
/// (Only when it names another file than the URL's, which the start opened already:
/// `PreparedTargetTests`; here `Content-Disposition` names it.)
@Suite struct TargetOpeningTests {
  /// The head and the first bytes arrive inside `start`, before the engine attaches the handle
  /// `start` returns (libcurl's event thread can be that quick): the resume the opened target
  /// asks for must still reach the transfer. Without it the download never ends.
  @Test func aTransferPausedBeforeItsHandleIsAttachedIsResumed() async throws {
    let directory = try TemporaryDirectory()
    var options = DownloadTests.fastOptions()
    options.maxAttemptsWithoutProgress = 1  // a lost resume fails the test, not retried
    let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
    // Opening a file on another thread nearly always takes longer than this thread's next call;
    // when a starved thread loses that race, the bytes need not wait, and the next file tries.
    var paused = false
    for attempt in 0..<20 where !paused {
      let name = "early\(attempt).bin"
      let transport = EarlyHeadTransport(body: body, part: directory.file(name + ".part"))
      let download = try Download(
        url: "http://example.invalid/get?file=\(attempt)", to: .directory(directory.url), options: options,
        transport: transport)
      let result = try await download.run()
      #expect(try Data(contentsOf: result.file) == Data(body))
      #expect(result.file.lastPathComponent == name)
      let counts = transport.counts.withLock { $0 }
      #expect(counts.neverResumed == 0)
      paused = counts.pausedAtStart == 1
      if paused { #expect(counts.resumes >= 1) }
    }
    #expect(paused, "in 20 downloads, the first bytes never waited for the target")
  }
}

/// Serves one 200 response of `body` for every request, delivering the head and the first
/// chunk inside `start`, the rest from another thread.
private final class EarlyHeadTransport: Transport {
  let body: [UInt8]
  /// The `.part` file the download creates once it has named its target.
  let part: URL
  let counts = Locked(Counts())

  struct Counts {
    var pausedAtStart = 0
    var resumes = 0
    /// Transfers that waited 10 s for a resume that never came.
    var neverResumed = 0
  }

  init(body: [UInt8], part: URL) {
    self.body = body
    self.part = part
  }

  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle {
    let handle = Handle(counts: counts)
    var headers = HTTPHeaders()
    headers.add(name: "Content-Length", value: String(body.count))
    headers.add(name: "ETag", value: "\"early\"")
    headers.add(
      name: "Content-Disposition",
      value: "attachment; filename=\"\(part.deletingPathExtension().lastPathComponent)\"")
    let head = ResponseHead(status: 200, headers: headers, finalURL: request.url)
    guard sink.transferDidReceiveHead(head) == .deliver else {
      sink.transferDidFinish(head: head, failure: .refusedBySink)
      return handle
    }
    let chunk = 16_384
    let first = body.withUnsafeBytes {
      sink.transferDidReceive(UnsafeRawBufferPointer(rebasing: $0[0..<chunk]))
    }
    if first == .pause {
      counts.withLock { $0.pausedAtStart += 1 }
      // Return (and let the engine attach the handle) only once the target is open and the
      // resume asked for: the `.part` file, then a margin for the few calls after it.
      let part = part.path
      let deadline = Date().addingTimeInterval(10)
      while !FileManager.default.fileExists(atPath: part), Date() < deadline { usleep(1_000) }
      usleep(100_000)
    }
    let body = body
    let counts = counts
    Thread.detachNewThread {
      var offset = first == .accepted ? chunk : 0
      var result = first
      while offset < body.count || result == .pause {
        if result == .pause {
          guard handle.waitForResume() else {
            counts.withLock { $0.neverResumed += 1 }
            return sink.transferDidFinish(
              head: head, failure: TransportFailure(kind: .timedOut, message: "never resumed", code: 28))
          }
        }
        let end = min(offset + chunk, body.count)
        result = body.withUnsafeBytes {
          sink.transferDidReceive(UnsafeRawBufferPointer(rebasing: $0[offset..<end]))
        }
        switch result {
        case .accepted: offset = end
        case .pause: continue
        case .abort:
          return sink.transferDidFinish(head: head, failure: .refusedBySink)
        }
      }
      sink.transferDidFinish(head: head, failure: nil)
    }
    return handle
  }

  final class Handle: TransferHandle {
    private let resumed = DispatchSemaphore(value: 0)
    private let counts: Locked<Counts>
    private let cancelled = Atomic(false)

    init(counts: Locked<Counts>) { self.counts = counts }

    func cancel() {
      cancelled.store(true, ordering: .relaxed)
      resumed.signal()
    }

    func resumeReceiving() {
      counts.withLock { $0.resumes += 1 }
      resumed.signal()
    }

    /// Whether the transfer may go on: resumed within 10 s, not cancelled.
    func waitForResume() -> Bool {
      resumed.wait(timeout: .now() + 10) == .success && !cancelled.load(ordering: .relaxed)
    }
  }
}
