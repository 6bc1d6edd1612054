import Dispatch
import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// What a run leaves when it returns: its `.part` free for the next run, whoever still holds
/// a reference to a finished transfer's sink.
@Suite struct RunEndTests {
  /// libcurl's event thread lets go of a finished transfer's sink only after the finish call
  /// returns, and the run may have returned by then; the transport here never lets go. A rerun
  /// of the same download (a fresh URL's, the user's) must still resume, not find the `.part`
  /// locked as if another process were downloading it.
  @Test func aRunThatEndedLeavesItsPartFileUnlocked() async throws {
    let directory = try TemporaryDirectory()
    let file = directory.file("kept.bin")
    let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) }
    let transport = SinkKeepingTransport(body: body, failAt: 120_000)
    let options = DownloadTests.fastOptions()

    let first = try Download(
      url: "http://example.invalid/kept.bin", to: .file(file), options: options, transport: transport)
    await #expect(throws: HaulError.self) { try await first.run() }
    #expect(transport.keptSinks == 1)
    #expect(FileManager.default.fileExists(atPath: file.path + ".part"))

    let second = try Download(
      url: "http://example.invalid/kept.bin", to: .file(file), options: options, transport: transport)
    let result = try await second.run()
    #expect(result.resumedFrom == 120_000)
    #expect(try Data(contentsOf: file) == Data(body))
    #expect(transport.keptSinks == 2)
  }

  /// A stop is decided while the transport still delivers: libcurl hands over what it already
  /// read before the cancelled transfer ends. That late chunk is refused, but the bytes received
  /// before the stop, still staged and not yet written, must reach the file and the state (they
  /// were lost: the late chunk discarded them, and a stop soon after the start kept nothing).
  @Test func bytesReceivedBeforeAStopAreKeptWhenMoreArriveAfterIt() async throws {
    let directory = try TemporaryDirectory()
    let file = directory.file("late.bin")
    let body = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
    let transport = LateChunkTransport(body: body, before: 3)
    var options = DownloadTests.fastOptions()
    options.checkpointInterval = 60  // nothing is written for its age: the chunks stay staged
    let download = try Download(
      url: "http://example.invalid/late.bin", to: .file(file), options: options, transport: transport)
    let run = Task { () -> HaulError? in
      do throws(HaulError) {
        _ = try await download.run()
        return nil
      } catch {
        return error
      }
    }
    // Waited for off the cooperative threads: blocking one of them here could keep `run` from
    // starting at all when other tests hold the rest (it timed out under ThreadSanitizer in CI).
    let delivered = await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        continuation.resume(returning: transport.delivered.wait(timeout: .now() + 30))
      }
    }
    #expect(delivered == .success)
    download.cancel(keepPartial: true)
    let error = await run.value
    #expect(error?.category == .interrupted)
    #expect(transport.lateChunkRefused.withLock { $0 })
    let kept = 3 * LateChunkTransport.chunk
    #expect(SavedProgress.load(for: file)?.bytes == Int64(kept))
    let part = try Data(contentsOf: URL(fileURLWithPath: file.path + ".part"))
    #expect(part.prefix(kept) == Data(body.prefix(kept)))
  }
}

/// Serves `body` as a 200 in 16 KiB chunks: `before` of them, then waits for the transfer's
/// cancel and delivers one more (as libcurl may) before it reports the cancelled end.
private final class LateChunkTransport: Transport {
  static let chunk = 16_384
  let body: [UInt8]
  let before: Int
  /// Signalled once the first `before` chunks were taken.
  let delivered = DispatchSemaphore(value: 0)
  let cancelled = DispatchSemaphore(value: 0)
  let lateChunkRefused = Locked(false)

  init(body: [UInt8], before: Int) {
    self.body = body
    self.before = before
  }

  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Length", value: String(body.count))
    headers.add(name: "ETag", value: "\"late\"")
    let head = ResponseHead(status: 200, headers: headers, finalURL: request.url)
    Thread.detachNewThread { [self] in
      guard sink.transferDidReceiveHead(head) == .deliver else {
        return sink.transferDidFinish(head: head, failure: .refusedBySink)
      }
      func offer(_ index: Int) -> ReceiveResult {
        body.withUnsafeBytes {
          sink.transferDidReceive(
            UnsafeRawBufferPointer(rebasing: $0[index * Self.chunk..<(index + 1) * Self.chunk]))
        }
      }
      for index in 0..<before {
        while offer(index) == .pause { usleep(1_000) }
      }
      delivered.signal()
      _ = cancelled.wait(timeout: .now() + 30)
      let late = offer(before)
      lateChunkRefused.withLock { $0 = late == .abort }
      sink.transferDidFinish(
        head: head, failure: TransportFailure(kind: .cancelled, message: "cancelled", code: 42))
    }
    return Handle(cancelled: cancelled)
  }

  private struct Handle: TransferHandle {
    let cancelled: DispatchSemaphore
    func cancel() { cancelled.signal() }
    func resumeReceiving() {}
  }
}

/// Serves `body` (a 200, or a 206 from a `Range: bytes=N-`), ending the first response at
/// `failAt` with an error that is not retried; keeps every sink it was given, for good.
private final class SinkKeepingTransport: Transport {
  let body: [UInt8]
  let failAt: Int
  private let sinks = Locked<[any TransferSink]>([])

  init(body: [UInt8], failAt: Int) {
    self.body = body
    self.failAt = failAt
  }

  var keptSinks: Int { sinks.withLock { $0.count } }

  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle {
    let first = sinks.withLock { sinks in
      sinks.append(sink)
      return sinks.count == 1
    }
    let range = request.headers.first { $0.name.caseInsensitiveEquals("Range") }?.value
    let from = range.flatMap { Int($0.dropFirst("bytes=".count).prefix { $0 != "-" }) } ?? 0
    var headers = HTTPHeaders()
    headers.add(name: "Content-Length", value: String(body.count - from))
    headers.add(name: "ETag", value: "\"kept\"")
    if from > 0 { headers.add(name: "Content-Range", value: "bytes \(from)-\(body.count - 1)/\(body.count)") }
    let head = ResponseHead(status: from > 0 ? 206 : 200, headers: headers, finalURL: request.url)
    let (body, end) = (body, first ? failAt : body.count)
    Thread.detachNewThread {
      guard sink.transferDidReceiveHead(head) == .deliver else {
        return sink.transferDidFinish(head: head, failure: .refusedBySink)
      }
      var offset = from
      while offset < end {
        let next = min(offset + 16_384, end)
        let taken = body.withUnsafeBytes {
          sink.transferDidReceive(UnsafeRawBufferPointer(rebasing: $0[offset..<next]))
        }
        switch taken {
        case .accepted: offset = next
        case .pause: usleep(1_000)  // offered again; the blocks free up as the lane writes them
        case .abort: return sink.transferDidFinish(head: head, failure: .refusedBySink)
        }
      }
      let failure =
        first ? TransportFailure(kind: .tls, message: "certificate revoked mid-body", code: 35) : nil
      sink.transferDidFinish(head: head, failure: failure)
    }
    return NoHandle()
  }

  private struct NoHandle: TransferHandle {
    func cancel() {}
    func resumeReceiving() {}
  }
}
