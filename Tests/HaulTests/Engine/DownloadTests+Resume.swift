import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

// Resuming: If-Range, saved state, servers that ignore or misreport ranges.
extension DownloadTests {
  // MARK: - Resuming

  @Test func resumesAfterDroppedConnectionsWithIfRange() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 1_000_000, seed: 8)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: Self.etag, lastModified: Self.date,
        faults: TestFaults(dropAfterBytes: 300_000, dropTimes: 3)))
    let directory = try TemporaryDirectory()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let requests = server.requests(for: "/f")
    #expect(requests.count == 4)
    for request in requests.dropFirst() {
      #expect(request.header("Range")?.hasPrefix("bytes=") == true)
      #expect(request.header("If-Range") == Self.etag)
      #expect(request.status == 206)
    }
    #expect(outcome.retries.count == 3)
    #expect(outcome.restarts.isEmpty)
  }

  @Test func ifRangeFallsBackToLastModifiedForWeakETags() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 9)
    server.setResource(
      "/f",
      TestResource(
        body: body, etag: "W/\"weak\"", lastModified: Self.date,
        faults: TestFaults(dropAfterBytes: 40_000, dropTimes: 1)))
    let directory = try TemporaryDirectory()
    _ = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/f").last?.header("If-Range") == Self.date)
  }

  @Test func resumesInANewRunFromTheSavedState() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 10)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Self.makePartial(server: server, path: "/f", file: file, bytes: 123_456)
    let progress = try #require(SavedProgress.load(for: file))
    #expect(progress.totalBytes == 500_000)
    #expect(progress.url == server.url("/f"))
    #expect(SavedProgress.all(in: directory.url) == [progress])
    server.clearRequests()
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 123_456)
    #expect(outcome.value?.bytesReceived == Int64(500_000 - 123_456))
    #expect(server.requests.first?.header("Range") == "bytes=123456-")
    #expect(outcome.started.first?.resumedFrom == 123_456)
  }

  @Test func resumeInADirectoryFindsThePartialByURL() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 200_000, seed: 11)
    server.setResource(
      "/get?id=1",
      TestResource(body: body, etag: Self.etag, contentDisposition: "attachment; filename=report.pdf"))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(
      server: server, path: "/get?id=1", file: directory.file("report.pdf"), bytes: 50_000)
    server.clearRequests()
    let outcome = try await Self.run(server.url("/get?id=1"), to: .directory(directory.url))
    #expect(outcome.value?.file.lastPathComponent == "report.pdf")
    do {
      let same = Self.holds(directory.file("report.pdf"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests.first?.header("Range") == "bytes=50000-")
  }

  @Test func serverIgnoringRangesRestartsFromZeroWithThatResponse() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 400_000, seed: 12)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    server.updateFaults("/f") { $0.ignoreRange = true }
    server.clearRequests()
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests.count == 1)  // the 200 itself was used
    #expect(outcome.restarts.count == 1)
  }

  @Test func resourceReplacedOnServerIsNeverSpliced() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 400_000, seed: 13)
    server.setResource("/f", TestResource(body: old, etag: "\"old\""))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 150_000)
    let new = TestResource.random(size: 400_000, seed: 14)
    server.setResource("/f", TestResource(body: new, etag: "\"new\""))
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), new)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.count == 1)
  }

  @Test func brokenIfRangeServerIsCaughtByETag() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 300_000, seed: 15)
    server.setResource("/f", TestResource(body: old, etag: "\"old\""))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    let new = TestResource.random(size: 300_000, seed: 16)
    server.setResource(
      "/f", TestResource(body: new, etag: "\"new\"", faults: TestFaults(ignoreIfRange: true)))
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), new)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.first?.contains("ETag") == true)
  }

  @Test func wrongContentRangeIsNeverWrittenAtTheWrongOffset() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 17)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    server.updateFaults("/f") { $0.contentRangeShift = 1000 }
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.count == 1)
  }

  @Test func changedTotalInContentRangeRestarts() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 18)
    server.setResource("/f", TestResource(body: body))  // no validators: the total is the only guard
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 100_000)
    server.updateFaults("/f") { $0.wrongTotal = 999_999 }
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.first?.contains("size") == true)
  }

  @Test func partialLongerThanRemoteIsDiscarded() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 19)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    try await Self.makePartial(server: server, path: "/f", file: directory.file("f"), bytes: 250_000)
    let smaller = TestResource.random(size: 100_000, seed: 20)
    server.setResource("/f", TestResource(body: smaller))
    let outcome = try await Self.run(server.url("/f"), to: .file(directory.file("f")))
    do {
      let same = Self.holds(directory.file("f"), smaller)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.first?.contains("shorter than the partial") == true)
  }

  @Test func partialHoldingEverythingCompletesWithoutFetching() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 64_000, seed: 21)
    server.setResource("/f", TestResource(body: body, etag: Self.etag))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    // As if a run was killed after its last byte but before the rename.
    try Data(body).write(to: URL(fileURLWithPath: file.path + ".part"))
    var state = ResumeState(url: server.url("/f"))
    state.totalBytes = 64_000
    state.etag = Self.etag
    state.setContiguous(64_000)
    try StateJournal.save(state, to: file.path + ".haul")
    let outcome = try await Self.run(server.url("/f"), to: .file(file))
    #expect(outcome.error == nil)
    do {
      let same = Self.holds(file, body)
      #expect(same, "file bytes differ")
    }
    // Every byte was durable and bound to its version: finishing needs no request at all.
    #expect(server.requests.isEmpty)
    #expect(outcome.value?.bytesReceived == 0)
  }
}
