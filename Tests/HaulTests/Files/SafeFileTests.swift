import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `SafeFile`'s rules, one by one: what it opens, what it refuses and why, and that a refusal
/// leaves the file (and what it points to) alone.
@Suite struct SafeFileTests {
  static func reason(_ body: () throws(LocalFileError) -> Void) -> LocalFileError.Reason? {
    do throws(LocalFileError) {
      try body()
      return nil
    } catch {
      return error.reason
    }
  }

  /// Opens `path` with `openExisting` and closes it again; the refusal reason, if any.
  static func openReason(_ path: String) -> LocalFileError.Reason? {
    reason { () throws(LocalFileError) in _ = try SafeFile.openExisting(path) }
  }

  // MARK: - Opening

  @Test func createsThenReuses() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("f").path
    do {
      let created = try SafeFile.openOrCreate(path)
      let wasCreated = created.created
      #expect(wasCreated)
      try created.writeAll(Array("abc".utf8))
    }
    let reused = try SafeFile.openOrCreate(path)
    let wasCreated = reused.created
    #expect(!wasCreated)
    #expect(try reused.readAll(limit: 10) == Array("abc".utf8))
  }

  /// An open told what a look just before found (`Seen`) still follows the rules when the name
  /// changed since: what appeared is reused only if allowed, a link or FIFO is refused, a
  /// vanished file is created anew.
  @Test func whatChangedSinceTheLookIsStillChecked() throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(at: elsewhere.file("victim").path)
    let link = directory.file("link").path
    try Planted.symbolicLink(at: link, to: victim.path)
    for seen in [SafeFile.Seen.absent, .reusable] {
      #expect(
        Self.reason { () throws(LocalFileError) in _ = try SafeFile.openOrCreate(link, seen: seen) }
          == .symbolicLink)
    }
    victim.expectUntouched()

    let fifo = directory.file("fifo").path
    try #require(mkfifo(fifo, 0o644) == 0)
    for seen in [SafeFile.Seen.absent, .reusable] {
      #expect(
        Self.reason { () throws(LocalFileError) in _ = try SafeFile.openOrCreate(fifo, seen: seen) }
          == .notRegular("a FIFO"))
    }

    let appeared = directory.file("appeared").path
    try Data("abc".utf8).write(to: URL(fileURLWithPath: appeared))
    let reused = try SafeFile.openOrCreate(appeared, seen: .absent)
    let wasCreated = reused.created
    #expect(!wasCreated)
    #expect(try reused.readAll(limit: 10) == Array("abc".utf8))

    let vanished = try SafeFile.openOrCreate(directory.file("vanished").path, seen: .reusable)
    let created = vanished.created
    #expect(created)
  }

  @Test func descriptorsAreCloseOnExecAndBlocking() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("f").path
    let created = try SafeFile.createExclusive(path)
    let reopened = try SafeFile.openExisting(path)
    for descriptor in [created.descriptor, reopened.descriptor] {
      #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0)
      #expect(fcntl(descriptor, F_GETFL) & O_NONBLOCK == 0)
    }
  }

  @Test func aMissingFileIsENOENT() throws {
    let directory = try TemporaryDirectory()
    #expect(Self.openReason(directory.file("none").path) == .system(SystemError("open", errno: ENOENT)))
    #expect(try SafeFile.check(directory.file("none").path) == false)
  }

  @Test func symbolicLinksAreRefusedDanglingOrNot() throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(at: elsewhere.file("victim").path)
    let link = directory.file("link").path
    let dangling = directory.file("dangling").path
    try Planted.symbolicLink(at: link, to: victim.path)
    try Planted.symbolicLink(at: dangling, to: elsewhere.file("not-yet").path)
    for path in [link, dangling] {
      #expect(Self.openReason(path) == .symbolicLink)
      #expect(Self.reason { () throws(LocalFileError) in _ = try SafeFile.check(path) } == .symbolicLink)
      #expect(
        Self.reason { () throws(LocalFileError) in _ = try SafeFile.createExclusive(path) } == .symbolicLink)
      #expect(
        Self.reason { () throws(LocalFileError) in _ = try SafeFile.openOrCreate(path) } == .symbolicLink)
    }
    victim.expectUntouched()
    #expect(
      !FileManager.default.fileExists(atPath: elsewhere.file("not-yet").path), "a dangling link was followed")
  }

  @Test func hardLinksAreRefused() throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let original = try Victim(at: elsewhere.file("victim").path)
    let link = directory.file("link").path
    try Planted.hardLink(at: link, to: original.path)
    let victim = try original.planted()
    #expect(Self.openReason(link) == .hardLinks(2))
    #expect(Self.openReason(victim.path) == .hardLinks(2))
    victim.expectUntouched()
  }

  /// A file removed while it is looked at (`lstat` or `fstat` then reports no link: SQLite drops
  /// its `-wal` as its last connection closes) is absent, not a file with other names: 20
  /// parallel `haul add` once failed on "catalog.sqlite-wal has 0 hard links".
  @Test func aFileRemovedWhileLookedAtIsAbsent() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("f").path
    let file = try SafeFile.openOrCreate(path)
    var info = stat()
    #expect(fstat(file.descriptor, &info) == 0)
    #expect(try SafeFile.reusableOrGone(info, path)?.st_ino == info.st_ino)
    #expect(unlink(path) == 0)
    #expect(fstat(file.descriptor, &info) == 0 && info.st_nlink == 0)
    #expect(try SafeFile.reusableOrGone(info, path) == nil)
    info.st_nlink = 2
    #expect(
      Self.reason { () throws(LocalFileError) in _ = try SafeFile.reusableOrGone(info, path) }
        == .hardLinks(2))
  }

  @Test func onlyRegularFilesAreReused() throws {
    let directory = try TemporaryDirectory()
    let fifo = directory.file("fifo").path
    try #require(mkfifo(fifo, 0o644) == 0)
    // Without O_NONBLOCK and the look first, this open would wait for a writer forever.
    #expect(Self.openReason(fifo) == .notRegular("a FIFO"))
    #expect(Self.openReason(directory.url.path) == .notRegular("a directory"))
    #expect(Self.openReason("/dev/null") == .notRegular("a character device"))
  }

  @Test(.enabled(if: geteuid() == 0, "needs root, to give a file to another user; skipped"))
  func filesOfAnotherUserAreRefused() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("theirs").path
    try Data("theirs".utf8).write(to: URL(fileURLWithPath: path))
    try #require(chown(path, 1001, 1001) == 0)
    #expect(Self.openReason(path) == .foreignOwner(uid: 1001))
  }

  @Test func refusalsSayWhatAndWhere() {
    let error = LocalFileError("/d/f.part", .hardLinks(3))
    #expect(error.isRefusal)
    #expect(error.haulError.category == .fileSystem)
    #expect(
      error.haulError.message
        == "/d/f.part has 3 hard links; haul does not write into a file that has other names")
    #expect(error.haulError.hint?.contains("nothing was written") == true)
    let failure = LocalFileError("/d/f.part", call: "write", errno: ENOSPC)
    #expect(!failure.isRefusal)
    #expect(failure.haulError.message == "the disk is full while writing /d/f.part")
    #expect(failure.haulError.hint == nil)
  }

  // MARK: - Replacing through a temporary file

  @Test(arguments: [true, false])
  func replaceWritesAndLeavesNothingElse(unnamed: Bool) throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.haul").path
    var random = SystemRandomNumberGenerator()
    for content in ["first", "second"] {
      try SafeFile.replace(path, with: Array(content.utf8), mode: 0o644, unnamed: unnamed) {
        SafeFile.temporaryPath(beside: path, using: &random)
      }
      #expect(try SafeFile.contents(of: path, limit: 100) == Array(content.utf8))
    }
    #expect(try Planted.names(in: directory.url) == ["x.haul"])
  }

  /// A name guessed and planted before the write is skipped, never written through.
  @Test(arguments: [true, false])
  func aPlantedTemporaryNameIsSkipped(unnamed: Bool) throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(at: elsewhere.file("victim").path)
    let path = directory.file("x.haul").path
    let guessed = path + ".tmp-guessed00000"
    try Planted.symbolicLink(at: guessed, to: victim.path)
    var names = [guessed, path + ".tmp-second000000"].makeIterator()
    try SafeFile.replace(path, with: Array("state".utf8), mode: 0o644, unnamed: unnamed) {
      names.next() ?? ""
    }
    #expect(try SafeFile.contents(of: path, limit: 100) == Array("state".utf8))
    victim.expectUntouched()
    Planted.expectSymbolicLink(at: guessed, to: victim.path)
    #expect(try Planted.names(in: directory.url) == ["x.haul", "x.haul.tmp-guessed00000"])
  }

  /// The rename fails (a directory is in the way): the temporary file goes, the old contents stay.
  @Test(arguments: [true, false])
  func aFailedReplaceRemovesItsTemporaryFile(unnamed: Bool) throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.haul").path
    try FileManager.default.createDirectory(atPath: path + "/inside", withIntermediateDirectories: true)
    var random = SystemRandomNumberGenerator()
    let reason = Self.reason { () throws(LocalFileError) in
      try SafeFile.replace(path, with: Array("state".utf8), mode: 0o644, unnamed: unnamed) {
        SafeFile.temporaryPath(beside: path, using: &random)
      }
    }
    #expect(reason != nil)
    #expect(try Planted.names(in: directory.url) == ["x.haul"])
    #expect(try Planted.names(in: URL(fileURLWithPath: path)) == ["inside"])
  }

  @Test func temporaryNamesAreUnguessableAndFit() {
    var random = SystemRandomNumberGenerator()
    let names = (0..<1_000).map { _ in SafeFile.temporaryPath(beside: "/d/x.haul", using: &random) }
    #expect(Set(names).count == names.count)
    for name in names {
      #expect(name.hasPrefix("/d/x.haul.tmp-") && name.count == "/d/x.haul.tmp-".count + 12)
      #expect(SafeFile.isTemporaryName(String(name.dropFirst(3)), beside: "/d/x.haul"))
    }
    let long = String(repeating: "é", count: 123) + ".haul"  // 251 bytes
    let shortened = SafeFile.temporaryPath(beside: "d/" + long, using: &random)
    #expect(shortened.dropFirst(2).utf8.count <= 255)
    #expect(SafeFile.isTemporaryName(String(shortened.dropFirst(2)), beside: "d/" + long))
    #expect(!SafeFile.isTemporaryName("x.haul.tmp", beside: "x.haul"))
    #expect(!SafeFile.isTemporaryName("y.haul.tmp-AAAAAAAAAAAA", beside: "x.haul"))
  }

  /// A kill -9 between writing a temporary copy and renaming it leaves the copy; the run that
  /// finishes the download removes exactly those, nothing of another file's.
  @Test func leftoverTemporariesOfAFileAreRemovedAndNothingElse() throws {
    let directory = try TemporaryDirectory()
    let names = [
      "x.haul.tmp-AAAAAAAAAAAA", "x.haul.tmp-0123456789ab", "x.haul.tmp-short",
      "x.haul.tmp-AAAAAAAAAAAA.keep",
      "xy.haul.tmp-AAAAAAAAAAAA", "x.haul", "x",
    ]
    for name in names { try Data("old".utf8).write(to: directory.file(name)) }
    SafeFile.removeLeftoverTemporaries(beside: directory.file("x.haul").path)
    #expect(
      try Planted.names(in: directory.url)
        == ["x", "x.haul", "x.haul.tmp-AAAAAAAAAAAA.keep", "x.haul.tmp-short", "xy.haul.tmp-AAAAAAAAAAAA"])
  }

  // MARK: - Locks and whole files

  @Test func aLockIsExclusiveUntilReleased() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.lock").path
    var first = try FileLock.acquire(path)
    #expect(first != nil)
    #expect(try FileLock.acquire(path) == nil, "a second open of the same file must not get the lock")
    first = nil
    #expect(try FileLock.acquire(path) != nil)
    var info = stat()
    #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
  }

  @Test func aLockLeavesANoteAndNeverTruncatesAPlantedLink() throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let path = directory.file("catalog.lock").path
    let lock = try FileLock.acquire(path, note: "4242\n")
    #expect(lock != nil)
    #expect(FileLock.note(at: path) == "4242\n")
    #expect(try FileLock.acquire(path, note: "other\n") == nil)
    #expect(FileLock.note(at: path) == "4242\n", "a refused acquire must not write its note")

    let original = try Victim(at: elsewhere.file("victim").path)
    let planted = directory.file("planted.lock").path
    try Planted.hardLink(at: planted, to: original.path)
    let victim = try original.planted()
    #expect(
      Self.reason { () throws(LocalFileError) in _ = try FileLock.acquire(planted, note: "1\n") }
        == .hardLinks(2))
    victim.expectUntouched()
  }

  @Test func aTemporaryFileIsNewAndUnguessable() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("catalog.sqlite").path
    let (first, firstPath) = try SafeFile.createTemporary(beside: path)
    let (second, secondPath) = try SafeFile.createTemporary(beside: path)
    defer {
      close(first)
      close(second)
    }
    #expect(firstPath != secondPath)
    #expect(SafeFile.isTemporaryName(URL(fileURLWithPath: firstPath).lastPathComponent, beside: path))
    let file = try SafeFile.openExisting(firstPath)
    #expect(try file.status().st_mode & 0o777 == 0o600)
  }

  @Test func aPrivateDirectoryIsMadeOrChecked() throws {
    let directory = try TemporaryDirectory()
    let fresh = directory.file("haul").path
    try SafeFile.makePrivateDirectory(fresh)
    #expect(try Victim.status(fresh).st_mode & 0o7777 == 0o700)
    try SafeFile.makePrivateDirectory(fresh)

    let open = directory.file("open").path
    try #require(mkdir(open, 0o700) == 0 && chmod(open, 0o777) == 0)
    let file = directory.file("file").path
    try Data().write(to: URL(fileURLWithPath: file))
    let link = directory.file("link").path
    try Planted.symbolicLink(at: link, to: fresh)
    func refusal(_ path: String) -> LocalFileError.Reason? {
      Self.reason { () throws(LocalFileError) in try SafeFile.makePrivateDirectory(path) }
    }
    #expect(refusal(open) == .writableByOthers(mode: 0o777))
    #expect(refusal(file) == .notDirectory("a regular file"))
    #expect(refusal(link) == .symbolicLink)
    #expect(refusal(directory.file("no/parent").path) == .system(SystemError("mkdir", errno: ENOENT)))
    if geteuid() == 0 {
      let theirs = directory.file("theirs").path
      try #require(mkdir(theirs, 0o700) == 0 && chown(theirs, 1001, 1001) == 0)
      #expect(refusal(theirs) == .foreignOwner(uid: 1001))
    }
  }

  @Test func contentsStopAtTheLimit() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("f").path
    try Data(repeating: 7, count: 100).write(to: URL(fileURLWithPath: path))
    #expect(try SafeFile.contents(of: path, limit: 100).count == 100)
    #expect(
      Self.reason { () throws(LocalFileError) in _ = try SafeFile.contents(of: path, limit: 99) }
        == .tooLarge(limit: 99))
  }
}

/// The one EINTR loop.
@Suite struct SystemCallTests {
  @Test func retriesOnlyEINTR() throws {
    var calls = 0
    let result = SystemCall.retryingEINTR { () -> Int in
      calls += 1
      if calls < 3 {
        errno = EINTR
        return -1
      }
      return 42
    }
    #expect(result == 42 && calls == 3)

    calls = 0
    let failed = SystemCall.retryingEINTR { () -> Int32 in
      calls += 1
      errno = EBADF
      return -1
    }
    #expect(failed == -1 && calls == 1 && errno == EBADF)
    #expect(throws: SystemError("read", errno: EBADF)) {
      try SystemCall.retryingEINTR("read") { () -> Int in
        errno = EBADF
        return -1
      }
    }
  }
}
