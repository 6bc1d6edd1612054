import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What the command reads and checks on the user's behalf: input lists (files, pipes, FIFOs) and
/// the directory to write into.
@Suite struct UserFilesTests {
  static func reason(_ body: () throws(LocalFileError) -> Void) -> LocalFileError.Reason? {
    do throws(LocalFileError) {
      try body()
      return nil
    } catch {
      return error.reason
    }
  }

  @Test func readsAPipeToItsEnd() throws {
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    let body = TestResource.random(size: 200_000, seed: 5)
    let writeEnd = ends[1]
    let writer = Thread {
      body.withUnsafeBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        var done = 0
        while done < buffer.count {
          let count = write(writeEnd, base + done, buffer.count - done)
          if count <= 0 { break }
          done += count
        }
      }
      close(writeEnd)
    }
    writer.start()
    defer { close(ends[0]) }
    #expect(try UserFiles.readAll(descriptor: ends[0], limit: 1 << 20, name: "standard input") == body)
  }

  @Test func aLimitIsALimit() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("list").path
    try Data(repeating: 1, count: 1_000).write(to: URL(fileURLWithPath: path))
    #expect(try UserFiles.readAll(path: path, limit: 1_000).count == 1_000)
    #expect(
      Self.reason { () throws(LocalFileError) in _ = try UserFiles.readAll(path: path, limit: 999) }
        == .tooLarge(limit: 999))
  }

  /// The user's own path is followed: `-i <(command)` is a link to a pipe.
  @Test func followsTheUsersLinks() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("list").path
    try Data("http://a/\n".utf8).write(to: URL(fileURLWithPath: path))
    try FileManager.default.createSymbolicLink(atPath: directory.file("link").path, withDestinationPath: path)
    #expect(try UserFiles.readAll(path: directory.file("link").path, limit: 100) == Array("http://a/\n".utf8))
  }

  @Test func errorsNameTheFile() throws {
    let directory = try TemporaryDirectory()
    let missing = directory.file("none").path
    let error = #expect(throws: LocalFileError.self) { try UserFiles.readAll(path: missing, limit: 10) }
    #expect(error?.haulError.message == "\(missing): no such file or directory")
    #expect(error?.haulError.category == .fileSystem)
    #expect(
      Self.reason { () throws(LocalFileError) in
        _ = try UserFiles.readAll(path: directory.url.path, limit: 10)
      }
        == .notRegular("a directory"))
  }

  // MARK: - The directory to write into

  static func directoryError(_ path: String) -> HaulError? {
    do throws(HaulError) {
      try UserFiles.requireWritableDirectory(path)
      return nil
    } catch {
      return error
    }
  }

  @Test func aWritableDirectoryOrALinkToOnePasses() throws {
    let directory = try TemporaryDirectory()
    try FileManager.default.createSymbolicLink(
      atPath: directory.file("link").path, withDestinationPath: directory.url.path)
    #expect(Self.directoryError(directory.url.path) == nil)
    #expect(Self.directoryError(directory.file("link").path) == nil)
  }

  @Test func whatIsWrongWithADirectoryIsSaid() throws {
    let directory = try TemporaryDirectory()
    let file = directory.file("file").path
    try Data("x".utf8).write(to: URL(fileURLWithPath: file))
    let missing = directory.file("no/such").path
    #expect(Self.directoryError(missing)?.message == "the directory \(missing) does not exist")
    #expect(Self.directoryError(file)?.message == "\(file) is not a directory (it is a regular file)")
    #expect(
      Self.directoryError(file + "/sub")?.message == "\(file)/sub is not a directory: a part of it is a file")
    for path in [missing, file, file + "/sub"] { #expect(Self.directoryError(path)?.category == .fileSystem) }
  }

  @Test(.enabled(if: UnwritableDirectory.available, "cannot make an unwritable directory here; skipped"))
  func anUnwritableDirectoryIsFound() throws {
    let unwritable = try UnwritableDirectory()
    let error = Self.directoryError(unwritable.url.path)
    let expected =
      unwritable.mounted
      ? "the directory \(unwritable.url.path) is on a read-only file system"
      : "cannot write to the directory \(unwritable.url.path): permission denied"
    #expect(error?.message == expected)
    #expect(error?.category == .fileSystem)
  }
}
