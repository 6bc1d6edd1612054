import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A file of the user's that a planted link points at: it must come out of every test exactly as
/// it went in (bytes, size, inode, link count, modification and change times).
struct Victim {
  let path: String
  let bytes: [UInt8]
  private let before: stat

  /// Writes `bytes` at `path` (unless `existing`), then dates it in the past, so that any write
  /// would show in its times.
  init(
    at path: String, bytes: [UInt8] = Array("the user's own file, not to be touched\n".utf8),
    existing: Bool = false
  )
    throws
  {
    if !existing { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
    self.path = path
    self.bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
    var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
    try #require(utimensat(AT_FDCWD, path, &times, 0) == 0, "utimensat: \(errno)")
    before = try Self.status(path)
  }

  /// Re-reads the victim's status after links were planted to it (a hard link changes its
  /// link count and change time).
  func planted() throws -> Victim { try Victim(path: path, bytes: bytes, before: Self.status(path)) }

  private init(path: String, bytes: [UInt8], before: stat) {
    self.path = path
    self.bytes = bytes
    self.before = before
  }

  func expectUntouched(sourceLocation: SourceLocation = #_sourceLocation) {
    let now = try? Self.status(path)
    let same = (try? Data(contentsOf: URL(fileURLWithPath: path))).map(Array.init) == bytes
    #expect(same, "the victim \(path) was written", sourceLocation: sourceLocation)
    #expect(now?.st_size == before.st_size, sourceLocation: sourceLocation)
    #expect(now?.st_ino == before.st_ino, sourceLocation: sourceLocation)
    #expect(now?.st_nlink == before.st_nlink, "link count", sourceLocation: sourceLocation)
    #expect(now?.st_mtim.tv_sec == before.st_mtim.tv_sec, "mtime changed", sourceLocation: sourceLocation)
    #expect(now?.st_mtim.tv_nsec == before.st_mtim.tv_nsec, "mtime changed", sourceLocation: sourceLocation)
    #expect(now?.st_ctim.tv_sec == before.st_ctim.tv_sec, "ctime changed", sourceLocation: sourceLocation)
    #expect(now?.st_ctim.tv_nsec == before.st_ctim.tv_nsec, "ctime changed", sourceLocation: sourceLocation)
  }

  static func status(_ path: String) throws -> stat {
    var info = stat()
    try #require(lstat(path, &info) == 0, "lstat \(path): \(errno)")
    return info
  }
}

/// Links planted by "someone else" in the download directory, and checks they are still there.
enum Planted {
  static func symbolicLink(at path: String, to victim: String) throws {
    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: victim)
  }

  static func hardLink(at path: String, to victim: String) throws {
    try #require(link(victim, path) == 0, "link: \(errno)")
  }

  static func expectSymbolicLink(
    at path: String, to victim: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: path)
    #expect(destination == victim, "the planted link \(path) was changed", sourceLocation: sourceLocation)
  }

  static func expectHardLink(
    at path: String, to victim: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let planted = try? Victim.status(path)
    let original = try? Victim.status(victim)
    #expect(
      planted != nil && planted?.st_ino == original?.st_ino, "the planted hard link \(path) was replaced",
      sourceLocation: sourceLocation)
  }

  /// The names in `directory`, sorted.
  static func names(in directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
  }
}

/// A directory this process cannot create files in: a read-only tmpfs for root (whom permission
/// bits do not stop), a directory without write permission for anyone else.
final class UnwritableDirectory {
  let directory: TemporaryDirectory
  let mounted: Bool
  var url: URL { directory.url }

  init() throws {
    directory = try TemporaryDirectory()
    mounted = geteuid() == 0
    if mounted {
      try TmpfsDirectory.mount(directory.url.path, options: "ro,size=64k")
    } else {
      guard chmod(directory.url.path, 0o555) == 0 else { throw FixtureFailure("chmod: \(errno)") }
    }
  }

  deinit {
    if mounted { TmpfsDirectory.unmount(directory.url.path) } else { chmod(directory.url.path, 0o755) }
  }

  /// Whether one can be made here (root may be refused mounts in a container).
  static let available: Bool = (try? UnwritableDirectory()) != nil
}

/// A small tmpfs for one test (root only), unmounted when released: a disk that fills up.
final class TmpfsDirectory {
  let directory: TemporaryDirectory
  var url: URL { directory.url }

  init(size: String) throws {
    directory = try TemporaryDirectory()
    try Self.mount(directory.url.path, options: "size=\(size)")
  }

  deinit { Self.unmount(directory.url.path) }

  func file(_ name: String) -> URL { directory.file(name) }

  static let available: Bool = geteuid() == 0 && (try? TmpfsDirectory(size: "64k")) != nil

  static func mount(_ path: String, options: String) throws {
    let status = try run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", path])
    guard status == 0 else { throw FixtureFailure("mount -o \(options) \(path) failed (\(status))") }
  }

  static func unmount(_ path: String) { _ = try? run("/bin/umount", ["-l", path]) }

  private static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
    try Subprocess.capture(tool, arguments).termination.status
  }
}

/// A fixture that could not be set up (kept apart from test failures: availability checks try them).
struct FixtureFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
