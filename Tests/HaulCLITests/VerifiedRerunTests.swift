import Foundation
import HaulTestSupport
import Testing

/// A rerun of a finished download verifies what it reports: a checksum is checked against the
/// file, and a file changed in place is reported as changed (exit 9), not as complete; only
/// `--overwrite` fetches it again.
@Suite("haul rerun of a finished file")
struct VerifiedRerunTests {
  static func run(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try await CommandEndToEndTests.run(arguments, in: directory.url)
  }

  /// The JSON `completed` or `failed` line of a `--json` run.
  static func lastEvent(_ stdout: String) throws -> [String: Any] {
    let line = try #require(stdout.split(separator: "\n").last, "no JSON line")
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
  }

  /// Writes `bytes` at `offset` without truncating, as `dd conv=notrunc` does.
  static func overwrite(_ url: URL, at offset: UInt64, with bytes: String) throws {
    let handle = try FileHandle(forWritingTo: url)
    try handle.seek(toOffset: offset)
    handle.write(Data(bytes.utf8))
    try handle.close()
  }

  static func sha256(_ bytes: [UInt8]) throws -> String {
    let input = try TemporaryDirectory()
    try Data(bytes).write(to: input.file("input"))
    let output = try Subprocess.capture("/usr/bin/sha256sum", [], stdinFile: input.file("input").path)
    return String(output.stdoutText.prefix(64))
  }

  @Test func aChecksumIsCheckedAgainstTheFinishedFile() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 161)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"c\""))
    let directory = try TemporaryDirectory()
    #expect(try await Self.run(["-q", server.url("/f.bin")], in: directory).status == 0)

    let wrong = "sha-256=" + String(repeating: "0", count: 64)
    let mismatch = try await Self.run(["--json", "--checksum", wrong, server.url("/f.bin")], in: directory)
    #expect(mismatch.status == 9, "\(mismatch.stderr)")
    #expect(mismatch.stderr.contains("does not match the expected checksum"), "\(mismatch.stderr)")
    #expect(!mismatch.stderr.contains("already complete"), "\(mismatch.stderr)")
    #expect(try Self.lastEvent(mismatch.stdout)["event"] as? String == "failed")
    #expect(CommandEndToEndTests.holds(directory.file("f.bin"), body), "the file was touched")

    let hash = try Self.sha256(body)
    let right = try await Self.run(
      ["--json", "--checksum", "sha-256=" + hash, server.url("/f.bin")], in: directory)
    #expect(right.status == 0, "\(right.stderr)")
    let completed = try Self.lastEvent(right.stdout)
    #expect(completed["already_complete"] as? Bool == true)
    #expect(completed["sha256"] as? String == hash, "\(right.stdout)")
    // Without a checksum the rerun reports the SHA-256 the seal recorded, without reading the file.
    let plain = try await Self.run(["--json", server.url("/f.bin")], in: directory)
    #expect(try Self.lastEvent(plain.stdout)["sha256"] as? String == hash, "\(plain.stdout)")
  }

  @Test func aFileChangedInPlaceIsReportedAndKeptUnlessOverwrite() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 162)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"m\""))
    let directory = try TemporaryDirectory()
    #expect(try await Self.run(["-q", server.url("/f.bin")], in: directory).status == 0)
    let file = directory.file("f.bin")
    try Self.overwrite(file, at: 1000, with: "XXXX")
    let changed = try #require(CommandEndToEndTests.bytes(file))

    let rerun = try await Self.run([server.url("/f.bin")], in: directory)
    #expect(rerun.status == 9, "\(rerun.stderr)")
    #expect(rerun.stderr.contains("was changed after haul finished it"), "\(rerun.stderr)")
    #expect(rerun.stderr.contains("--overwrite"), "\(rerun.stderr)")
    #expect(!rerun.stderr.contains("already complete"), "\(rerun.stderr)")
    #expect(CommandEndToEndTests.holds(file, changed), "the changed file was touched")
    let requests = server.requests(for: "/f.bin").count

    // The right checksum does not make a changed file complete either.
    let hash = try Self.sha256(body)
    let checked = try await Self.run(["--checksum", "sha-256=" + hash, server.url("/f.bin")], in: directory)
    #expect(checked.status == 9, "\(checked.stderr)")
    #expect(
      server.requests(for: "/f.bin").count == requests, "a changed file was fetched without --overwrite")

    let again = try await Self.run(["--overwrite", server.url("/f.bin")], in: directory)
    #expect(again.status == 0, "\(again.stderr)")
    #expect(CommandEndToEndTests.holds(file, body), "--overwrite did not fetch it again")
    expectOnlyResult(in: directory, name: "f.bin")
  }

  @Test func aFileOfAnotherSizeIsReportedAsChanged() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 163)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"s\""))
    let directory = try TemporaryDirectory()
    #expect(try await Self.run(["-q", server.url("/f.bin")], in: directory).status == 0)
    let handle = try FileHandle(forWritingTo: directory.file("f.bin"))
    try handle.truncate(atOffset: 50_000)
    try handle.close()
    let rerun = try await Self.run([server.url("/f.bin")], in: directory)
    #expect(rerun.status == 9, "\(rerun.stderr)")
    #expect(rerun.stderr.contains("it holds 50000 bytes, not the 100000"), "\(rerun.stderr)")
  }

  /// Only its times changed (touch): the bytes are hashed, found as they were, and sealed again.
  @Test func aTouchedFileIsStillComplete() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 100_000, seed: 164)
    server.setResource("/f.bin", TestResource(body: body, etag: "\"t\""))
    let directory = try TemporaryDirectory()
    #expect(try await Self.run(["-q", server.url("/f.bin")], in: directory).status == 0)
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)],
      ofItemAtPath: directory.file("f.bin").path)
    let rerun = try await Self.run(["--json", server.url("/f.bin")], in: directory)
    #expect(rerun.status == 0, "\(rerun.stderr)")
    let completed = try Self.lastEvent(rerun.stdout)
    #expect(completed["already_complete"] as? Bool == true, "\(rerun.stdout)")
    #expect(completed["sha256"] as? String == (try Self.sha256(body)))
  }
}
