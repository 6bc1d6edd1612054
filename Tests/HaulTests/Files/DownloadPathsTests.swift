import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The target's directory and name, and the sidecar paths, as the engine uses them; the one
/// look at the three files that a download's start decides on.
@Suite struct DownloadPathsTests {
  @Test(arguments: [
    ("f", ".", "f"),
    ("/f", "/", "f"),
    ("a/b/f.iso", "a/b", "f.iso"),
    ("/tmp/x/f", "/tmp/x", "f"),
    ("a//f", "a", "f"),
  ])
  func directoryAndName(target: String, directory: String, name: String) {
    let paths = DownloadPaths(target: target)
    #expect(paths.directory == directory)
    #expect(paths.name == name)
    #expect(paths.part == target + ".part")
    #expect(paths.state == target + ".haul")
  }

  @Test(arguments: [("d", "d/f"), ("d/", "d/f"), ("/", "/f"), ("", "f"), (".", "./f")])
  func joinedWithADirectory(directory: String, target: String) {
    #expect(DownloadPaths(directory: directory, name: "f").target == target)
  }

  // MARK: - The look at the start

  /// The refusal `look` throws, as its message; nil when it allows the files.
  static func refusal(_ paths: DownloadPaths, replacingTarget: Bool = false) -> String? {
    do throws(HaulError) {
      _ = try paths.look(replacingTarget: replacingTarget)
      return nil
    } catch {
      return error.message
    }
  }

  @Test func nothingThereIsSeenAsNothing() throws {
    let directory = try TemporaryDirectory()
    let seen = try DownloadPaths(target: directory.file("f").path).look(replacingTarget: false)
    #expect(seen.target == nil && seen.part == nil && seen.state == nil)
    #expect(!seen.targetIsDirectory)
  }

  @Test func whatIsThereIsSeenOnce() throws {
    let directory = try TemporaryDirectory()
    let paths = DownloadPaths(target: directory.file("f").path)
    for path in [paths.target, paths.part, paths.state] {
      try Data("x".utf8).write(to: URL(fileURLWithPath: path))
    }
    let seen = try paths.look(replacingTarget: false)
    for info in [seen.target, seen.part, seen.state] { #expect(info.map { $0.st_mode & S_IFMT } == S_IFREG) }
    #expect(!seen.targetIsDirectory)
  }

  /// The decisions taken on what was seen still refuse a link at the `.part` or state file,
  /// dangling or not, and whether the target is to be replaced or not; the victim is untouched.
  @Test(arguments: ["f.part", "f.haul"], [false, true])
  func aLinkAtAFileOfItsOwnIsRefused(_ name: String, replacingTarget: Bool) throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(at: elsewhere.file("victim").path)
    let paths = DownloadPaths(target: directory.file("f").path)
    try Planted.symbolicLink(at: directory.file(name).path, to: victim.path)
    #expect(Self.refusal(paths, replacingTarget: replacingTarget)?.contains("symbolic link") == true)
    try FileManager.default.removeItem(atPath: directory.file(name).path)
    try Planted.symbolicLink(at: directory.file(name).path, to: elsewhere.file("not-yet").path)
    #expect(Self.refusal(paths, replacingTarget: replacingTarget)?.contains("symbolic link") == true)
    victim.expectUntouched()
    #expect(!FileManager.default.fileExists(atPath: elsewhere.file("not-yet").path))
  }

  @Test func aFIFOAtThePartFileIsRefused() throws {
    let directory = try TemporaryDirectory()
    let paths = DownloadPaths(target: directory.file("f").path)
    try #require(mkfifo(paths.part, 0o644) == 0)
    #expect(Self.refusal(paths)?.contains("FIFO") == true)
  }

  /// A link at the target: refused unless the target is to be replaced; then seen as the link
  /// itself, a directory when it leads to one.
  @Test func aLinkAtTheTargetIsRefusedUnlessReplaced() throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(at: elsewhere.file("victim").path)
    let paths = DownloadPaths(target: directory.file("f").path)
    try Planted.symbolicLink(at: paths.target, to: victim.path)
    #expect(Self.refusal(paths)?.contains("symbolic link") == true)
    let seen = try paths.look(replacingTarget: true)
    #expect(seen.target.map { $0.st_mode & S_IFMT } == S_IFLNK)
    #expect(!seen.targetIsDirectory)
    try FileManager.default.removeItem(atPath: paths.target)
    try Planted.symbolicLink(at: paths.target, to: elsewhere.url.path)
    #expect(try paths.look(replacingTarget: true).targetIsDirectory)
    victim.expectUntouched()
  }

  @Test func aDirectoryAtTheTargetIsSeenAsOne() throws {
    let directory = try TemporaryDirectory()
    let paths = DownloadPaths(target: directory.file("f").path)
    try FileManager.default.createDirectory(atPath: paths.target, withIntermediateDirectories: false)
    #expect(try paths.look(replacingTarget: false).targetIsDirectory)
  }
}
