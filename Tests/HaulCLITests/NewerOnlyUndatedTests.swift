import Foundation
import HaulTestSupport
import Testing

/// `-N` against a server that gives no modification time: it cannot tell which copy is newer,
/// so a file haul did not make (or made from another URL) is kept, with exit 3, as haul keeps
/// it without -N; it used to be replaced with exit 0.
@Suite("haul -N without the server's time", .timeLimit(.minutes(1)))
struct NewerOnlyUndatedTests {
  static func serve(_ server: TestServer, _ path: String, seed: UInt64) -> [UInt8] {
    let body = TestResource.random(size: 20_000, seed: seed)
    // An ETag, and no Last-Modified.
    server.setResource(path, TestResource(body: body, etag: "\"\(seed)\""))
    return body
  }

  @Test func aFileHaulDidNotMakeIsKept() async throws {
    let server = try TestServer()
    let body = Self.serve(server, "/notes.bin", seed: 220)
    let directory = try TemporaryDirectory()
    let local = directory.file("notes.bin")
    try Data("notes\n".utf8).write(to: local)
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_893_456_000)], ofItemAtPath: local.path)

    let kept = try await CommandEndToEndTests.run(["-N", server.url("/notes.bin")], in: directory.url)
    #expect(kept.status == 3, "\(kept.stderr)")
    #expect(
      kept.stderr
        == "haul: the server gives no modification time, so -N cannot compare; kept ./notes.bin\n"
        + "haul: use --overwrite to replace it\n")
    expectBytes(directory.contents("notes.bin"), equal: Array("notes\n".utf8))
    #expect(server.requests(for: "/notes.bin").count == 1, "only the question, no download")

    // Quiet still says it: the status is an error's.
    let quiet = try await CommandEndToEndTests.run(["-q", "-N", server.url("/notes.bin")], in: directory.url)
    #expect(quiet.status == 3 && quiet.stderr.contains("-N cannot compare"), "\(quiet.stderr)")

    let replaced = try await CommandEndToEndTests.run(
      ["-q", "-N", "--overwrite", server.url("/notes.bin")], in: directory.url)
    #expect(replaced.status == 0, "\(replaced.stderr)")
    expectBytes(directory.contents("notes.bin"), equal: body)
  }

  @Test func aFileHaulMadeFromAnotherURLIsKept() async throws {
    let server = try TestServer()
    let first = Self.serve(server, "/a.bin", seed: 221)
    _ = Self.serve(server, "/b.bin", seed: 222)
    let directory = try TemporaryDirectory()
    let made = try await CommandEndToEndTests.run(
      ["-q", "-o", "f.bin", server.url("/a.bin")], in: directory.url)
    #expect(made.status == 0, "\(made.stderr)")

    let other = try await CommandEndToEndTests.run(
      ["-N", "-o", "f.bin", server.url("/b.bin")], in: directory.url)
    #expect(other.status == 3, "\(other.stderr)")
    #expect(other.stderr.contains("-N cannot compare; kept f.bin"), "\(other.stderr)")
    expectBytes(directory.contents("f.bin"), equal: first)

    // Its own URL: the library's rerun, which finds it complete and replaces nothing.
    let own = try await CommandEndToEndTests.run(
      ["-N", "-o", "f.bin", server.url("/a.bin")], in: directory.url)
    #expect(own.status == 0, "\(own.stderr)")
    #expect(own.stderr.contains("f.bin is already complete"), "\(own.stderr)")
    expectBytes(directory.contents("f.bin"), equal: first)
  }
}
