import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul` in a directory someone else can write to: a link planted at a name it is about to use
/// stops it with exit 3 and a message naming the file, and neither the link nor the file it
/// points to changes. (The library's cases, every name and every kind: `PlantedFileTests`.)
@Suite struct PlantedFileCommandTests {
  static let body = TestResource.random(size: 200_000, seed: 1_102)

  /// A victim file elsewhere, dated in the past, and a way to see that it did not change.
  struct Victim {
    let path: String
    let bytes = Array("the user's own file, not to be touched\n".utf8)

    init(in directory: TemporaryDirectory) throws {
      path = directory.file("victim").path
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
      try #require(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    func expectUntouched(sourceLocation: SourceLocation = #_sourceLocation) {
      var info = stat()
      #expect(lstat(path, &info) == 0, sourceLocation: sourceLocation)
      #expect(
        info.st_mtim.tv_sec == 1_000_000_000 && info.st_mtim.tv_nsec == 0, sourceLocation: sourceLocation)
      let same = FileManager.default.contents(atPath: path).map(Array.init) == bytes
      #expect(same, "the victim was written", sourceLocation: sourceLocation)
    }
  }

  static func serve() throws -> TestServer {
    let server = try TestServer()
    server.setResource("/file.bin", TestResource(body: body, etag: "\"cmd\""))
    return server
  }

  @Test(arguments: ["file.bin.part", "file.bin.haul"])
  func aSymbolicLinkStopsTheCommand(_ name: String) async throws {
    let server = try Self.serve()
    defer { server.stop() }
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(in: elsewhere)
    let planted = directory.file(name).path
    try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: victim.path)

    let outcome = try await HaulBinary.run([
      "--overwrite", "-o", directory.file("file.bin").path, server.url("/file.bin"),
    ])
    #expect(outcome.status == 3, "\(outcome)")
    #expect(
      outcome.stderr.contains("\(planted) is a symbolic link; haul does not write through links"),
      "\(outcome)")
    #expect(outcome.stderr.contains("nothing was written"), "the hint: \(outcome)")
    victim.expectUntouched()
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: planted) == victim.path)
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == [name])
    #expect(server.requests.isEmpty)
  }

  @Test func aHardLinkStopsTheCommand() async throws {
    let server = try Self.serve()
    defer { server.stop() }
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(in: elsewhere)
    let planted = directory.file("file.bin.part").path
    try #require(link(victim.path, planted) == 0)

    let outcome = try await HaulBinary.run(["--overwrite", "-d", directory.url.path, server.url("/file.bin")])
    #expect(outcome.status == 3, "\(outcome)")
    #expect(outcome.stderr.contains("\(planted) has 2 hard links"), "\(outcome)")
    victim.expectUntouched()
    var info = stat()
    #expect(lstat(victim.path, &info) == 0 && info.st_nlink == 2, "the planted link was removed")
  }
}
