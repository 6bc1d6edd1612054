import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A tmpfs mounted for one test (root only), unmounted when released.
final class TmpfsMount: Sendable {
  let directory: TemporaryDirectory
  var url: URL { directory.url }

  init(options: String) throws {
    directory = try TemporaryDirectory()
    let outcome = try TestEnvironment.runTool(
      "/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", directory.url.path])
    guard outcome.status == 0 else {
      throw MountFailure(description: "mount -o \(options) failed: \(outcome)")
    }
  }

  func remount(_ options: String) throws {
    let outcome = try TestEnvironment.runTool("/bin/mount", ["-o", "remount," + options, directory.url.path])
    try #require(outcome.status == 0, "remount -o \(options) failed: \(outcome)")
  }

  func file(_ name: String) -> URL { directory.file(name) }

  deinit { _ = try? TestEnvironment.runTool("/bin/umount", ["-l", directory.url.path]) }

  struct MountFailure: Error, CustomStringConvertible { let description: String }

  /// Whether this process may mount a tmpfs (tried once).
  static let permitted: Bool = {
    guard getuid() == 0 else { return false }
    return (try? TmpfsMount(options: "size=64k")) != nil
  }()

  /// Run the tests: mounting works, or we are under CI, where it must.
  static let shouldTest = permitted || TestEnvironment.isCI
}

/// Disks that fill up, directories that cannot be written, paths that are wrong: `haul` must stop
/// with exit status 3, say what and where, and lose nothing.
@Suite("file-system faults")
struct FileSystemFaultTests {
  static func serve(
    _ size: Int, seed: UInt64, bytesPerSecond: Int? = nil, chunked: Bool = false
  ) throws -> (TestServer, [UInt8]) {
    let body = TestResource.random(size: size, seed: seed)
    let server = try TestServer()
    server.setResource(
      "/file.bin",
      TestResource(
        body: body, etag: "\"fs\(seed)\"",
        faults: TestFaults(chunked: chunked, bytesPerSecond: bytesPerSecond)))
    return (server, body)
  }

  @Test(.enabled(if: TmpfsMount.shouldTest, "mounting a tmpfs is not permitted here (needs root); skipped"))
  func diskFullKeepsAConsistentPartialAndResumesWhenThereIsRoom() async throws {
    // At 4 MB/s the 2 MiB disk fills in about half a second: periodic checkpoints (every 0.25 s)
    // land before it is full. Once it is full not even the sidecar can be rewritten, so the bytes
    // after the last checkpoint are fetched again (unthrottled, the claim is often just 16 KiB).
    // Chunked, so the size is unknown up front: with it Haul would refuse before the body
    // ("needs 4 MiB, 2 MiB free"), and the disk would never fill.
    let (server, body) = try Self.serve(4 << 20, seed: 21, bytesPerSecond: 4_000_000, chunked: true)
    defer { server.stop() }
    let mount = try TmpfsMount(options: "size=2m")
    let target = mount.file("file.bin")

    let full = try await HaulBinary.run(["-x", "1", "-o", target.path, server.url("/file.bin")])
    #expect(full.status == 3, "\(full)")
    #expect(full.stderr.contains("disk is full"), "\(full)")
    #expect(full.stderr.contains(mount.url.path), "the message should say where: \(full)")
    #expect(!FileManager.default.fileExists(atPath: target.path))
    #expect(FileManager.default.fileExists(atPath: target.path + ".part"), "the partial file was not kept")
    let state = try #require(try Sidecar.read(target.path + ".haul"), "the sidecar was not kept")
    let part = try #require(FileManager.default.contents(atPath: target.path + ".part"))
    let claim = state.claimedPrefix
    #expect(claim <= Int64(part.count), "the sidecar claims \(claim) bytes, the .part holds \(part.count)")
    expectBytes(part.prefix(Int(claim)), equal: body.prefix(Int(claim)), "the claimed prefix")
    print("disk full: \(part.count) bytes in the .part, \(claim) claimed by the sidecar")

    try mount.remount("size=8m")
    server.clearRequests()
    let resumed = try await HaulBinary.run(["--json", "-x", "1", "-o", target.path, server.url("/file.bin")])
    #expect(resumed.status == 0, "\(resumed)")
    expectBytes(FileManager.default.contents(atPath: target.path).map(Array.init), equal: body)
    #expect(!FileManager.default.fileExists(atPath: target.path + ".part"))
    #expect(claim > 0, "nothing was kept to resume from")
    let range = server.requests(for: "/file.bin").first?.header("Range")
    #expect(range == "bytes=\(claim)-", "the second run did not resume: \(server.requests)")
  }

  @Test(.enabled(if: TmpfsMount.shouldTest, "mounting a tmpfs is not permitted here (needs root); skipped"))
  func readOnlyDirectory() async throws {
    let (server, _) = try Self.serve(100_000, seed: 22)
    defer { server.stop() }
    // chmod does not stop root: a read-only file system does.
    let mount = try TmpfsMount(options: "size=1m")
    let existing = Array("keep me\n".utf8)
    try Data(existing).write(to: mount.file("existing.txt"))
    try mount.remount("ro")

    let outcome = try await HaulBinary.run(["-o", mount.file("file.bin").path, server.url("/file.bin")])
    #expect(outcome.status == 3, "\(outcome)")
    #expect(outcome.stderr.contains("read-only"), "\(outcome)")
    #expect(outcome.stderr.contains(mount.url.path), "the message should say where: \(outcome)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: mount.url.path) == ["existing.txt"])
    #expect(FileManager.default.contents(atPath: mount.file("existing.txt").path).map(Array.init) == existing)

    let intoDirectory = try await HaulBinary.run(["-d", mount.url.path, server.url("/file.bin")])
    #expect(intoDirectory.status == 3, "\(intoDirectory)")
    #expect(intoDirectory.stderr.contains("read-only"), "\(intoDirectory)")
  }

  @Test func missingDirectory() async throws {
    let (server, body) = try Self.serve(100_000, seed: 23)
    defer { server.stop() }
    let directory = try TemporaryDirectory()
    let missing = directory.file("no/such/dir")

    // -o names a file: its directory must exist (as with curl -o and wget -O).
    let output = try await HaulBinary.run([
      "-o", missing.appendingPathComponent("file.bin").path, server.url("/file.bin"),
    ])
    #expect(output.status == 3, "\(output)")
    #expect(output.stderr.contains("does not exist") && output.stderr.contains(missing.path), "\(output)")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty,
      "nothing may be created")
    #expect(server.requests.isEmpty, "no request is needed to know the directory is missing")

    // -d names a directory: it is created with its parents, as the README's `haul -d isos URL…` expects.
    let intoDirectory = try await HaulBinary.run(["-q", "-d", missing.path + "/", server.url("/file.bin")])
    #expect(intoDirectory.status == 0, "\(intoDirectory)")
    expectBytes(FileManager.default.contents(atPath: missing.path + "/file.bin").map(Array.init), equal: body)

    let batch = directory.file("isos")
    let several = try await HaulBinary.run([
      "-q", "-d", batch.path, server.url("/file.bin"), server.url("/other.bin"),
    ])
    #expect(several.status == 8, "\(several)")  // other.bin is 404; file.bin arrives.
    expectBytes(FileManager.default.contents(atPath: batch.path + "/file.bin").map(Array.init), equal: body)
  }

  @Test func directoryThatIsAFile() async throws {
    let (server, _) = try Self.serve(100_000, seed: 26)
    defer { server.stop() }
    let directory = try TemporaryDirectory()
    let file = directory.file("isos")
    try Data("not a directory\n".utf8).write(to: file)

    for urls in [[server.url("/file.bin")], [server.url("/file.bin"), server.url("/other.bin")]] {
      let outcome = try await HaulBinary.run(["-d", file.path] + urls)
      #expect(outcome.status == 3, "\(outcome)")
      #expect(
        outcome.stderr.hasPrefix("haul: \(file.path) is not a directory (it is a regular file)\n"),
        "\(outcome)")
      #expect(outcome.stderr.components(separatedBy: "not a directory").count == 2, "said once: \(outcome)")
    }
    let below = try await HaulBinary.run(["-d", file.path + "/sub", server.url("/file.bin")])
    #expect(below.status == 3, "\(below)")
    #expect(below.stderr.contains("\(file.path)/sub") && below.stderr.contains("ot a directory"), "\(below)")
    #expect(server.requests.isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["isos"])
  }

  @Test func unreadableInputFileIsAFileError() async throws {
    let directory = try TemporaryDirectory()
    let missing = directory.file("nonexistent/urls.txt").path
    let outcome = try await HaulBinary.run(["-i", missing])
    #expect(outcome.status == 3, "\(outcome)")
    #expect(
      outcome.stderr == "haul: cannot read the input file \(missing): No such file or directory\n",
      "\(outcome)")
    let json = try await HaulBinary.run(["--json", "-i", missing])
    #expect(json.status == 3)
    #expect(json.event("failed")?["category"] == "file_system", "\(json)")
  }

  @Test func targetIsAnExistingDirectory() async throws {
    let (server, _) = try Self.serve(100_000, seed: 24)
    defer { server.stop() }
    let directory = try TemporaryDirectory()
    let occupied = directory.file("file.bin")
    try FileManager.default.createDirectory(at: occupied, withIntermediateDirectories: false)
    let inside = Array("inside\n".utf8)
    try Data(inside).write(to: occupied.appendingPathComponent("keep.txt"))

    let outcome = try await HaulBinary.run(["-o", occupied.path, server.url("/file.bin")])
    #expect(outcome.status == 3, "\(outcome)")
    #expect(outcome.stderr.contains("\(occupied.path) is a directory"), "\(outcome)")
    // The command's words, not the library's: -d saves into it.
    #expect(outcome.stderr.contains("save into it with -d instead of -o"), "\(outcome)")
    #expect(!outcome.stderr.contains("DownloadDestination"), "\(outcome)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["file.bin"])
    #expect(try FileManager.default.contentsOfDirectory(atPath: occupied.path) == ["keep.txt"])
    #expect(
      FileManager.default.contents(atPath: occupied.appendingPathComponent("keep.txt").path).map(Array.init)
        == inside)
  }

  @Test func existingFileNotFromHaulIsLeftAlone() async throws {
    let (server, _) = try Self.serve(100_000, seed: 25)
    defer { server.stop() }
    let directory = try TemporaryDirectory()
    let mine = Array("my own file\n".utf8)
    try Data(mine).write(to: directory.file("file.bin"))

    let outcome = try await HaulBinary.run(["-o", directory.file("file.bin").path, server.url("/file.bin")])
    #expect(outcome.status == 3, "\(outcome)")
    #expect(outcome.stderr.contains("already exists"), "\(outcome)")
    #expect(outcome.stderr.contains("--overwrite"), "\(outcome)")
    #expect(directory.contents("file.bin") == mine)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["file.bin"])
  }
}
