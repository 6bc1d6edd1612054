import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// Issue 11 part 1, end to end: a server that sends no validators (no ETag, no Last-Modified)
/// and changes its file between runs, keeping its size, never produces a splice.
@Suite struct OverlapResumeTests {
  typealias Run = DownloadTests

  @Test func aChangedFileWithoutValidatorsStartsOverInsteadOfSplicing() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 600_000, seed: 110)
    server.setResource("/f", TestResource(body: old))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f", file: file, bytes: 250_000)
    let new = TestResource.random(size: 600_000, seed: 111)
    server.setResource("/f", TestResource(body: new))
    server.clearRequests()
    let outcome = try await Run.run(server.url("/f"), to: .file(file))
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(file, new)
      #expect(same, "the file is not the new version (a splice?)")
    }
    #expect(outcome.restarts.count == 1)
    #expect(outcome.restarts.first?.contains("changed") == true, "\(outcome.restarts)")
    #expect(server.requests(for: "/f").first?.header("Range") == "bytes=\(250_000 - 65_536)-")
    #expect(outcome.value?.resumedFrom == 0)
  }

  @Test func anUnchangedFileWithoutValidatorsResumesAfterTheOverlap() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 600_000, seed: 112)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f", file: file, bytes: 250_000)
    server.clearRequests()
    let sentBefore = server.bodyBytesSent(for: "/f")
    let outcome = try await Run.run(server.url("/f"), to: .file(file))
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.isEmpty)
    #expect(outcome.value?.resumedFrom == 250_000)
    // The overlap is the whole price: 64 KiB more than the missing bytes.
    #expect(server.bodyBytesSent(for: "/f") - sentBefore == 600_000 - 250_000 + 65_536)
    #expect(server.requests(for: "/f").map { $0.header("If-Range") } == [nil])
  }

  @Test func fewerHeldBytesThanTheOverlapAreAllCompared() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 100_000, seed: 113)
    server.setResource("/f", TestResource(body: old))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try await Run.makePartial(server: server, path: "/f", file: file, bytes: 20_000)
    let new = TestResource.random(size: 100_000, seed: 114)
    server.setResource("/f", TestResource(body: new))
    server.clearRequests()
    let outcome = try await Run.run(server.url("/f"), to: .file(file))
    do {
      let same = Run.holds(file, new)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/f").first?.header("Range") == "bytes=0-")
    #expect(outcome.restarts.count == 1)
  }

  /// Several connections, resuming a partial whose held ranges lie apart (an earlier run of
  /// four connections that all broke): every range continuing held bytes is checked, and a
  /// changed file is fetched anew, whole.
  @Test func manyConnectionsNeverSpliceAChangedFileWithoutValidators() async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 2_000_000, seed: 115)
    server.setResource("/f", TestResource(body: old, faults: TestFaults(dropAfterBytes: 150_000)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var first = Run.fastOptions()
    first.connections = 4
    first.maxAttemptsWithoutProgress = 1
    let broken = try await Run.run(server.url("/f"), to: .file(file), options: first, minimumSplit: 100_000)
    #expect(broken.error != nil)
    let held = try #require(SavedProgress.load(for: file)?.bytes)
    #expect(held > 0)
    let new = TestResource.random(size: 2_000_000, seed: 116)
    server.setResource("/f", TestResource(body: new))
    var options = Run.fastOptions()
    options.connections = 4
    let outcome = try await Run.run(
      server.url("/f"), to: .file(file), options: options, minimumSplit: 100_000)
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(file, new)
      #expect(same, "the file is not the new version (a splice?)")
    }
    #expect(outcome.restarts.contains { $0.contains("changed") }, "\(outcome.restarts)")
  }

  /// The same, when the file did not change: it resumes, and every byte is right.
  @Test func manyConnectionsResumeAnUnchangedFileWithoutValidators() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 117)
    server.setResource("/f", TestResource(body: body, faults: TestFaults(dropAfterBytes: 150_000)))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    var first = Run.fastOptions()
    first.connections = 4
    first.maxAttemptsWithoutProgress = 1
    _ = try await Run.run(server.url("/f"), to: .file(file), options: first, minimumSplit: 100_000)
    let held = try #require(SavedProgress.load(for: file)?.bytes)
    server.setResource("/f", TestResource(body: body))
    var options = Run.fastOptions()
    options.connections = 4
    let outcome = try await Run.run(
      server.url("/f"), to: .file(file), options: options, minimumSplit: 100_000)
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.restarts.isEmpty)
    #expect(outcome.value?.resumedFrom == held)
  }
}
