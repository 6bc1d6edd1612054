import Dispatch
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// `Download.events` ends with `.completed` or `.failed`: nothing is delivered after them.
@Suite struct EventGateTests {
  static func progress(_ bytes: Int64) -> DownloadEvent {
    .progress(DownloadProgress(bytes: bytes, totalBytes: 10, bytesPerSecond: 1, connections: 1))
  }

  static func collect(_ stream: AsyncStream<DownloadEvent>) async -> [DownloadEvent] {
    var events: [DownloadEvent] = []
    for await event in stream { events.append(event) }
    return events
  }

  @Test func nothingAfterAFailure() async {
    let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self)
    let gate = EventGate(continuation)
    gate.send(Self.progress(1))
    let error = HaulError(.network, "gone")
    gate.close(with: .failed(error))
    gate.send(Self.progress(2))  // a late timer's
    #expect(await Self.collect(stream) == [Self.progress(1), .failed(error)])
  }

  @Test func nothingAfterCompletion() async {
    let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self)
    let gate = EventGate(continuation)
    let result = DownloadResult(
      file: URL(fileURLWithPath: "/tmp/f"), totalBytes: 10, bytesReceived: 10, resumedFrom: 0,
      finalURL: "http://h/f",
      wasAlreadyComplete: false, remoteChanged: false, duration: 1)
    gate.send(Self.progress(1))
    gate.send(.completed(result))
    gate.send(Self.progress(2))  // a late timer's
    gate.close(with: nil)
    #expect(await Self.collect(stream) == [Self.progress(1), .completed(result)])
  }

  /// Many threads sending while another closes: each thread's events arrive in the order it
  /// sent them, without gaps (those after the close are dropped), and `close` returns only
  /// after the stream ended, though other threads were yielding.
  @Test func concurrentSendsKeepEachSendersOrderAndCloseWaitsForTheEnd() async {
    for _ in 0..<20 {
      let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self)
      let gate = EventGate(continuation)
      let senders = 4
      let endedAtClose = Locked(false)
      DispatchQueue.concurrentPerform(iterations: senders + 1) { worker in
        guard worker < senders else {
          usleep(100)
          gate.close(with: nil)
          if case .terminated = continuation.yield(Self.progress(-1)) { endedAtClose.withLock { $0 = true } }
          return
        }
        for n in 0..<2_000 { gate.send(Self.progress(Int64(worker) * 1_000_000 + Int64(n))) }
      }
      #expect(endedAtClose.withLock { $0 })
      var next = [Int64](repeating: 0, count: senders)
      for await event in stream {
        guard case .progress(let progress) = event else { continue }
        let sender = Int(progress.bytes / 1_000_000)
        #expect(progress.bytes % 1_000_000 == next[sender])
        next[sender] += 1
      }
    }
  }

  /// A run cancelled before it started (a manager stopping a run it had just begun) ends
  /// `events` too: the manager waits for that end, and once waited forever (the full test run hung).
  @Test func aDownloadCancelledBeforeItRanEndsItsEvents() async throws {
    let directory = try TemporaryDirectory()
    let download = try Download(url: "http://127.0.0.1:9/never", to: .directory(directory.url))
    download.cancel()
    let error = await #expect(throws: HaulError.self) { try await download.run() }
    #expect(error?.category == .interrupted)
    // Bounded, so that the defect fails this test instead of hanging the run.
    let events = await withTaskGroup(of: [DownloadEvent]?.self) { group in
      group.addTask { await Self.collect(download.events) }
      group.addTask {
        try? await Task.sleep(for: .seconds(60))
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      return first
    }
    let ended = try #require(events, "events did not end")
    #expect(ended.count == 1)
    if case .failed(let failure)? = ended.first { #expect(failure.category == .interrupted) }
  }
}
