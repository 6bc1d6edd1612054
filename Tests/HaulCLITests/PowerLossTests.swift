import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A model of power loss: writes that were not synced may be missing or garbage after a reboot.
/// The sidecar claims only synced bytes, so whatever happens past the claim (or to the file's
/// length) must not end in a wrong file. Each test interrupts a download (the server drops the
/// connection and `--retries 0` gives up), damages the files as a power cut could, and reruns.
@Suite("power loss: unsynced writes lost or garbled")
struct PowerLossTests {
  static let size = 4 << 20
  static let dropAt = 1_500_000

  struct Interrupted {
    let server: TestServer
    let directory: TemporaryDirectory
    let body: [UInt8]
    let claim: Int64
    var target: URL { directory.file("file.bin") }
    var part: URL { directory.file("file.bin.part") }
    var url: String { server.url("/file.bin") }
  }

  /// A download stopped after `dropAt` bytes, with its `.part` and `.haul` kept.
  static func interrupted(seed: UInt64) async throws -> Interrupted {
    let body = TestResource.random(size: size, seed: seed)
    let server = try TestServer()
    server.setResource(
      "/file.bin",
      TestResource(body: body, etag: "\"p\(seed)\"", faults: TestFaults(dropAfterBytes: dropAt, dropTimes: 1))
    )
    let directory = try TemporaryDirectory()
    let first = try await HaulBinary.run([
      "-q", "-x", "1", "--retries", "0", "-o", directory.file("file.bin").path, server.url("/file.bin"),
    ])
    try #require(first.status == 4, "the first run should give up on the dropped connection: \(first)")
    let claim = try CrashTrialTests.checkDurableClaim(
      in: directory, name: "file.bin", source: body, etag: "\"p\(seed)\"", context: "after the drop")
    try #require(claim == Int64(dropAt), "the state should claim every byte received before the drop")
    server.clearRequests()
    return Interrupted(server: server, directory: directory, body: body, claim: claim)
  }

  static func finish(_ download: Interrupted) async throws -> ProcessOutcome {
    let outcome = try await HaulBinary.run(["--json", "-x", "1", "-o", download.target.path, download.url])
    #expect(outcome.status == 0, "\(outcome)")
    expectBytes(
      download.directory.contents("file.bin"), equal: download.body,
      "the finished file differs from the source")
    expectOnlyResult(in: download.directory, name: "file.bin")
    return outcome
  }

  static func setLength(_ url: URL, _ length: Int) throws {
    try #require(truncate(url.path, off_t(length)) == 0, "truncate failed: errno \(errno)")
  }

  static func overwrite(_ url: URL, at offset: Int, with bytes: [UInt8]) throws {
    let handle = try FileHandle(forWritingTo: url)
    defer { try? handle.close() }
    try handle.seek(toOffset: UInt64(offset))
    try handle.write(contentsOf: Data(bytes))
  }

  @Test func dataFileShorterThanTheClaimResumesFromWhatIsThere() async throws {
    let download = try await Self.interrupted(seed: 1)
    let kept = Int(download.claim) / 2 + 17
    try Self.setLength(download.part, kept)
    let outcome = try await Self.finish(download)
    #expect(outcome.event("started")?["resumed_from"] == String(kept))
    #expect(download.server.requests(for: "/file.bin").first?.header("Range") == "bytes=\(kept)-")
  }

  @Test func dataFileEmptiedStartsOver() async throws {
    let download = try await Self.interrupted(seed: 2)
    try Self.setLength(download.part, 0)
    _ = try await Self.finish(download)
    #expect(download.server.requests(for: "/file.bin").first?.header("Range") == nil)
  }

  @Test func garbageAfterTheClaimIsOverwritten() async throws {
    let download = try await Self.interrupted(seed: 3)
    // Blocks that reached the disk without the state that would claim them, half of them garbled.
    let claim = Int(download.claim)
    try Self.overwrite(download.part, at: claim, with: TestResource.random(size: 600_000, seed: 99))
    try Self.overwrite(
      download.part, at: claim + 600_000, with: Array(download.body[(claim + 600_000)..<(claim + 900_000)]))
    let outcome = try await Self.finish(download)
    #expect(outcome.event("started")?["resumed_from"] == String(claim))
  }

  @Test func zeroedTailAndOverlongFileAreCorrected() async throws {
    let download = try await Self.interrupted(seed: 4)
    // The file's length reached the disk but its data did not: zeros, and longer than the resource.
    try Self.setLength(download.part, Self.size + 4096)
    let outcome = try await Self.finish(download)
    #expect(outcome.event("started")?["resumed_from"] == String(download.claim))
  }

  @Test func zeroedBytesJustPastTheClaim() async throws {
    let download = try await Self.interrupted(seed: 5)
    let claim = Int(download.claim)
    try Self.setLength(download.part, claim + 300_000)
    try Self.overwrite(download.part, at: claim, with: [UInt8](repeating: 0, count: 300_000))
    _ = try await Self.finish(download)
  }

  @Test func tornSidecarStartsOverSafely() async throws {
    let download = try await Self.interrupted(seed: 6)
    // A sidecar whose checksum no longer matches (a torn write the file system let through).
    let sidecar = download.directory.file("file.bin.haul")
    var text = try String(contentsOf: sidecar, encoding: .utf8)
    text = text.replacingOccurrences(
      of: "\"ranges\":[{\"end\":\(download.claim)", with: "\"ranges\":[{\"end\":\(download.claim + 1000)")
    try #require(text.contains("\(download.claim + 1000)"), "could not alter the sidecar: \(text)")
    try text.write(to: sidecar, atomically: false, encoding: .utf8)
    let outcome = try await Self.finish(download)
    #expect(outcome.eventNames.contains("restarted"))
    #expect(download.server.requests(for: "/file.bin").first?.header("Range") == nil)
  }
}
