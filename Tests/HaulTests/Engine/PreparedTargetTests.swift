import Dispatch
import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// A download into a directory opens the file under the URL's name before its request, so a
/// response that names that file goes on at once; any other outcome removes what it opened.
@Suite struct PreparedTargetTests {
  private static let url = "http://example.invalid/dir/f.bin"
  private static let body = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ $0 >> 8) }

  private static func names(in directory: TemporaryDirectory) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
  }

  private static func download(
    into directory: TemporaryDirectory, from transport: HeldHeadTransport, fallbackFileName: String? = nil
  ) throws -> Download {
    var options = DownloadTests.fastOptions()
    options.fallbackFileName = fallbackFileName
    return try Download(url: url, to: .directory(directory.url), options: options, transport: transport)
  }

  private static func start(_ download: Download) -> Task<Result<DownloadResult, HaulError>, Never> {
    Task {
      do throws(HaulError) { return .success(try await download.run()) } catch { return .failure(error) }
    }
  }

  @Test func theURLsFileIsOpenBeforeTheResponseAndBecomesTheTarget() async throws {
    let directory = try TemporaryDirectory()
    let transport = HeldHeadTransport(body: Self.body)
    let download = try Self.download(into: directory, from: transport)
    let run = Self.start(download)
    #expect(await transport.nextRequest())
    #expect(try Self.names(in: directory) == ["f.bin.part"])
    transport.answer()
    let result = try await run.value.get()
    #expect(result.file.lastPathComponent == "f.bin")
    #expect(try Data(contentsOf: directory.file("f.bin")) == Data(Self.body))
    #expect(try Self.names(in: directory) == ["f.bin"])
  }

  @Test func aResponseNamingAnotherFileRemovesTheOneOpenedBefore() async throws {
    let directory = try TemporaryDirectory()
    let transport = HeldHeadTransport(
      body: Self.body, headers: [("Content-Disposition", "attachment; filename=\"other.bin\"")])
    let download = try Self.download(into: directory, from: transport)
    let run = Self.start(download)
    #expect(await transport.nextRequest())
    transport.answer()
    let result = try await run.value.get()
    #expect(result.file.lastPathComponent == "other.bin")
    #expect(try Data(contentsOf: directory.file("other.bin")) == Data(Self.body))
    #expect(try Self.names(in: directory) == ["other.bin"])
  }

  /// `--auto-rename` gives the later of two URLs of one name a numbered fallback: it is the
  /// file opened before the response, and the name, unless the server names another file.
  @Test func aFallbackNameTakesTheURLsPlaceUnlessTheServerNamesTheFile() async throws {
    let directory = try TemporaryDirectory()
    let unnamed = HeldHeadTransport(body: Self.body)
    let first = Self.start(try Self.download(into: directory, from: unnamed, fallbackFileName: "f.1.bin"))
    #expect(await unnamed.nextRequest())
    #expect(try Self.names(in: directory) == ["f.1.bin.part"])
    unnamed.answer()
    #expect(try await first.value.get().file.lastPathComponent == "f.1.bin")
    #expect(try Data(contentsOf: directory.file("f.1.bin")) == Data(Self.body))

    let named = HeldHeadTransport(
      body: Self.body, headers: [("Content-Disposition", "attachment; filename=\"other.bin\"")])
    let second = Self.start(try Self.download(into: directory, from: named, fallbackFileName: "f.2.bin"))
    #expect(await named.nextRequest())
    named.answer()
    #expect(try await second.value.get().file.lastPathComponent == "other.bin")
    #expect(try Self.names(in: directory) == ["f.1.bin", "other.bin"])
  }

  @Test(arguments: ["sub/f.bin", "f.bin.part", "..", "", "a\u{7}b"])
  func aFallbackNameMustBeAPlainName(_ name: String) throws {
    let directory = try TemporaryDirectory()
    let error = #expect(throws: HaulError.self) {
      try Self.download(into: directory, from: HeldHeadTransport(body: []), fallbackFileName: name)
    }
    #expect(error?.category == .invalidInput)
    #expect(error?.message == "fallbackFileName must be a plain file name (asked for '\(name)')")
  }

  @Test func aFailedResponseLeavesNothingBehind() async throws {
    let directory = try TemporaryDirectory()
    let transport = HeldHeadTransport(body: Self.body, status: 404)
    let download = try Self.download(into: directory, from: transport)
    let run = Self.start(download)
    #expect(await transport.nextRequest())
    transport.answer()
    await #expect(throws: HaulError.self) { try await run.value.get() }
    #expect(try Self.names(in: directory) == [])
  }

  /// A pause before any response records no state for a file no response named; the resume
  /// asks again and the answer finds the file still open.
  @Test func aPauseBeforeTheResponseSavesNoStateAndTheResumeUsesTheFile() async throws {
    let directory = try TemporaryDirectory()
    let transport = HeldHeadTransport(body: Self.body)
    let download = try Self.download(into: directory, from: transport)
    let paused = Task {
      for await event in download.events { if case .paused = event { return true } }
      return false
    }
    let run = Self.start(download)
    #expect(await transport.nextRequest())
    download.pause()
    #expect(await paused.value)
    #expect(try Self.names(in: directory) == ["f.bin.part"])
    download.resume()
    #expect(await transport.nextRequest())
    transport.answer()
    _ = try await run.value.get()
    #expect(try Data(contentsOf: directory.file("f.bin")) == Data(Self.body))
    #expect(try Self.names(in: directory) == ["f.bin"])
  }

  /// A file at the URL's name that Haul did not make: nothing is opened beside it before the
  /// response, and the response's refusal leaves it as it was.
  @Test func aFileAlreadyThereIsLeftToTheResponse() async throws {
    let directory = try TemporaryDirectory()
    try Data("mine".utf8).write(to: directory.file("f.bin"))
    let transport = HeldHeadTransport(body: Self.body)
    let download = try Self.download(into: directory, from: transport)
    let run = Self.start(download)
    #expect(await transport.nextRequest())
    #expect(try Self.names(in: directory) == ["f.bin"])
    transport.answer()
    await #expect(throws: HaulError.self) { try await run.value.get() }
    #expect(try Data(contentsOf: directory.file("f.bin")) == Data("mine".utf8))
    #expect(try Self.names(in: directory) == ["f.bin"])
  }
}

/// Holds every request until the test answers it (`answer`) or the engine cancels it; then
/// sends `status` with `headers` and, for a 2xx, `body` in one piece.
private final class HeldHeadTransport: Transport {
  let body: [UInt8]
  let status: Int
  let headers: [(String, String)]
  /// Signalled for each request, before it is answered.
  let requested = DispatchSemaphore(value: 0)
  private let answers = DispatchSemaphore(value: 0)

  init(body: [UInt8], status: Int = 200, headers: [(String, String)] = []) {
    self.body = body
    self.status = status
    self.headers = headers
  }

  func answer() { answers.signal() }

  /// Waits for the next request without holding one of the test's few cooperative threads.
  func nextRequest() async -> Bool {
    let deadline = ContinuousClock.now + .seconds(30)
    while requested.wait(timeout: .now()) == .timedOut {
      guard ContinuousClock.now < deadline else { return false }
      try? await Task.sleep(for: .milliseconds(2))
    }
    return true
  }

  func start(_ request: TransferRequest, sink: any TransferSink) -> any TransferHandle {
    let handle = Handle()
    Thread.detachNewThread { [self] in
      requested.signal()
      while answers.wait(timeout: .now() + 0.01) == .timedOut {
        if handle.cancelled.withLock({ $0 }) {
          return sink.transferDidFinish(
            head: nil, failure: TransportFailure(kind: .cancelled, message: "cancelled", code: 42))
        }
      }
      var fields = HTTPHeaders()
      fields.add(name: "Content-Length", value: String(status == 200 ? body.count : 0))
      fields.add(name: "ETag", value: "\"held\"")
      for (name, value) in headers { fields.add(name: name, value: value) }
      let head = ResponseHead(status: status, headers: fields, finalURL: request.url)
      guard sink.transferDidReceiveHead(head) == .deliver, status == 200 else {
        return sink.transferDidFinish(head: head, failure: nil)
      }
      while body.withUnsafeBytes({ sink.transferDidReceive($0) }) == .pause { usleep(1_000) }
      sink.transferDidFinish(head: head, failure: nil)
    }
    return handle
  }

  private final class Handle: TransferHandle {
    let cancelled = Locked(false)
    func cancel() { cancelled.withLock { $0 = true } }
    func resumeReceiving() {}
  }
}
