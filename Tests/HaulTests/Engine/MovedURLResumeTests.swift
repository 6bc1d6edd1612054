import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// Issue 11 part 4, end to end: a partial of an older URL (an expired signed link re-issued)
/// resumes from the new URL when the server proves it is the same file, and is left alone
/// when it is not.
@Suite struct MovedURLResumeTests {
  typealias Run = DownloadTests

  @Test func aReissuedLinkOfTheSameFileResumes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 130)
    server.setResource("/f?sig=old", TestResource(body: body, etag: "\"v1\""))
    server.setResource("/f?sig=new", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f?sig=old", file: file, bytes: 200_000)
    let outcome = try await Run.run(server.url("/f?sig=new"), to: .file(file))
    #expect(outcome.error == nil, "\(String(describing: outcome.error))")
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 200_000)
    let asked = server.requests(for: "/f?sig=new")
    #expect(asked.first?.header("Range") == "bytes=200000-" && asked.first?.header("If-Range") == "\"v1\"")
  }

  /// A directory destination (no `-o`): the new URL's first answer names the file, and the
  /// partial found under that name is continued by a request for the rest, not fetched again.
  @Test func aReissuedLinkResumesIntoADirectory() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 134)
    server.setResource("/f?sig=old", TestResource(body: body, etag: "\"v1\""))
    server.setResource("/f?sig=new", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f?sig=old", file: file, bytes: 200_000)
    let outcome = try await Run.run(server.url("/f?sig=new"), to: .directory(directory.url))
    #expect(outcome.error == nil, "\(String(describing: outcome.error))")
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 200_000 && outcome.restarts.isEmpty, "\(outcome.restarts)")
    let asked = server.requests(for: "/f?sig=new")
    #expect(asked.count == 2 && asked.first?.header("Range") == nil)
    #expect(asked.last?.header("Range") == "bytes=200000-" && asked.last?.header("If-Range") == "\"v1\"")
  }

  /// Interrupted again after the move, the state names the new URL.
  @Test func theNewURLIsRecorded() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 131)
    server.setResource("/f?sig=old", TestResource(body: body, etag: "\"v1\""))
    server.setResource("/f?sig=new", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f?sig=old", file: file, bytes: 100_000)
    server.updateFaults("/f?sig=new") {
      $0.dropAfterBytes = 150_000
      $0.dropTimes = 1
    }
    var options = Run.fastOptions()
    options.maxAttemptsWithoutProgress = 1
    options.checkpointInterval = 0.01
    let broken = try await Run.run(server.url("/f?sig=new"), to: .file(file), options: options)
    #expect(broken.error?.category == .network)
    #expect(SavedProgress.load(for: file)?.url == server.url("/f?sig=new"))
    #expect(SavedProgress.load(for: file)?.bytes == 250_000)
  }

  @Test func anotherFileAtTheNewURLLeavesThePartialAlone() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 500_000, seed: 132)
    server.setResource("/f?sig=old", TestResource(body: old, etag: "\"v1\""))
    server.setResource(
      "/f?sig=new", TestResource(body: TestResource.random(size: 500_000, seed: 133), etag: "\"v2\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f?sig=old", file: file, bytes: 200_000)
    let outcome = try await Run.run(server.url("/f?sig=new"), to: .file(file))
    #expect(outcome.error?.category == .fileSystem)
    #expect(outcome.error?.message.contains("another URL") == true, "\(String(describing: outcome.error))")
    #expect(outcome.error?.hint == LibraryWording.fetchMovedAnew)
    let part = URL(fileURLWithPath: file.path + ".part")
    do {
      let same = Run.holds(part, Array(old[0..<200_000]))
      #expect(same, "the partial changed")
    }
    #expect(SavedProgress.load(for: file)?.url == server.url("/f?sig=old"))
    #expect(!Run.exists(file.path))

    var options = Run.fastOptions()
    options.overwrite = true
    let replaced = try await Run.run(server.url("/f?sig=new"), to: .file(file), options: options)
    #expect(replaced.error == nil)
    #expect(server.resource("/f?sig=new").map { Run.holds(file, $0.body) } == true)
  }

  /// No validators anywhere: the overlap proves (or disproves) it.
  @Test func withoutValidatorsTheOverlapDecides() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 400_000, seed: 134)
    server.setResource("/f?sig=old", TestResource(body: body))
    server.setResource("/f?sig=new", TestResource(body: body))
    server.setResource("/f?sig=other", TestResource(body: TestResource.random(size: 400_000, seed: 135)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f?sig=old", file: file, bytes: 150_000)
    let refused = try await Run.run(server.url("/f?sig=other"), to: .file(file))
    #expect(refused.error?.message.contains("another URL") == true, "\(String(describing: refused.error))")
    #expect(SavedProgress.load(for: file)?.bytes == 150_000)
    let outcome = try await Run.run(server.url("/f?sig=new"), to: .file(file))
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 150_000)
  }
}

/// A server that answers `If-Range` with a `200` of the same strong ETag (some CDNs): the
/// range is asked for again without `If-Range`, and the whole file is not fetched again.
@Suite struct IgnoredIfRangeResumeTests {
  @Test func aWholeResponseWithTheSameETagIsNotFetchedAgain() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 600_000, seed: 141)
    server.setResource("/f", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await DownloadTests.makePartial(server: server, path: "/f", file: file, bytes: 250_000)
    server.enqueue("/f", .status(200, headers: [("ETag", "\"v1\""), ("Accept-Ranges", "bytes")], body: body))
    server.clearRequests()
    let outcome = try await DownloadTests.run(server.url("/f"), to: .file(file))
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.isEmpty)
    #expect(outcome.value?.resumedFrom == 250_000)
    let asked = server.requests(for: "/f")
    #expect(asked.count == 2)
    #expect(asked.last?.header("Range") == "bytes=250000-" && asked.last?.header("If-Range") == nil)
  }
}
