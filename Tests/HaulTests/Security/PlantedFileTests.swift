import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Someone who can write to the download directory plants a link (or a FIFO, or a file of their
/// own) at a name Haul is about to use, pointing at one of the user's files. Haul must refuse with
/// a `.fileSystem` error that names the file and the reason, write nothing through it, and leave
/// both the planted file and the victim exactly as they were.
@Suite struct PlantedFileTests {
  static let body = TestResource.random(size: 300_000, seed: 1_101)
  static let etag = "\"planted-1\""

  static func serve() throws -> TestServer {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: body, etag: etag))
    return server
  }

  /// The download directory (others can write to it) and another holding the user's files.
  struct Place {
    let directory: TemporaryDirectory
    let elsewhere: TemporaryDirectory

    init() throws {
      directory = try TemporaryDirectory()
      elsewhere = try TemporaryDirectory()
    }

    func inside(_ name: String) -> String { directory.file(name).path }
    func victim(_ name: String = "victim") -> String { elsewhere.file(name).path }
    func names() throws -> [String] { try Planted.names(in: directory.url) }
  }

  static func run(
    _ server: TestServer, to target: String, overwrite: Bool = false
  ) async throws -> DownloadTests.Outcome {
    var options = DownloadTests.fastOptions()
    options.overwrite = overwrite
    return try await DownloadTests.run(
      server.url("/f"), to: .file(URL(fileURLWithPath: target)), options: options)
  }

  static func expectRefusal(
    _ outcome: DownloadTests.Outcome, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(outcome.error?.category == .fileSystem, "\(outcome.result)", sourceLocation: sourceLocation)
    #expect(outcome.error?.message == message, sourceLocation: sourceLocation)
    #expect(outcome.error?.hint?.contains("nothing was written") == true, sourceLocation: sourceLocation)
  }

  static func symbolicLinkMessage(_ path: String) -> String {
    "\(path) is a symbolic link; haul does not write through links"
  }

  // MARK: - Symbolic links

  /// With `overwrite` (a `.part` Haul did not make may be replaced) today's main wrote the
  /// download into the victim; without, it refused but said the wrong thing.
  @Test(arguments: ["f.part", "f.haul"], [false, true])
  func aSymbolicLinkIsRefused(_ name: String, overwrite: Bool) async throws {
    let server = try Self.serve()
    let place = try Place()
    let victim = try Victim(at: place.victim())
    let planted = place.inside(name)
    try Planted.symbolicLink(at: planted, to: victim.path)

    let outcome = try await Self.run(server, to: place.inside("f"), overwrite: overwrite)
    Self.expectRefusal(outcome, Self.symbolicLinkMessage(planted))
    victim.expectUntouched()
    Planted.expectSymbolicLink(at: planted, to: victim.path)
    #expect(try place.names() == [name], "nothing else is created")
    #expect(server.requests.isEmpty, "refused before any request")
  }

  /// The state file's temporary copy once had a fixed name (`NAME.haul.tmp`), written through
  /// whatever was there on the second save. Its name is now unguessable, and it is created
  /// exclusively: a link at the old name is simply not used, and the download succeeds.
  @Test func aSymbolicLinkAtTheStateFilesTemporaryNameIsNeverWrittenThrough() async throws {
    let server = try Self.serve()
    let place = try Place()
    let target = place.inside("f")
    // A resumed download saves its state over an existing one: the save that used the old name.
    try await DownloadTests.makePartial(
      server: server, path: "/f", file: URL(fileURLWithPath: target), bytes: 100_000)
    // Slow enough for periodic checkpoints (every 0.25 s), each a save over the last.
    server.updateFaults("/f") { $0.bytesPerSecond = 400_000 }
    let victim = try Victim(at: place.victim())
    let planted = target + ".haul.tmp"
    try Planted.symbolicLink(at: planted, to: victim.path)

    let outcome = try await Self.run(server, to: target)
    #expect(outcome.error == nil, "\(outcome.result)")
    #expect(outcome.value?.resumedFrom == 100_000)
    #expect(DownloadTests.holds(URL(fileURLWithPath: target), Self.body))
    victim.expectUntouched()
    Planted.expectSymbolicLink(at: planted, to: victim.path)
    #expect(try place.names() == ["f", "f.haul.tmp"])
  }

  /// A link at the target whose destination Haul once finished from the same URL: its record
  /// must not make the link pass for a finished download.
  @Test func aSymbolicLinkAtTheTargetIsRefusedUnlessReplaced() async throws {
    let server = try Self.serve()
    let place = try Place()
    #expect(try await Self.run(server, to: place.victim()).error == nil)
    let victim = try Victim(at: place.victim(), existing: true)
    #expect(FinishedFileRecord.read(at: victim.path) != nil, "the victim carries a record for this URL")
    let target = place.inside("f")
    try Planted.symbolicLink(at: target, to: victim.path)
    server.clearRequests()

    let refused = try await Self.run(server, to: target)
    #expect(refused.error?.category == .fileSystem, "\(refused.result)")
    #expect(refused.error?.message == Self.symbolicLinkMessage(target))
    #expect(refused.error?.hint == LibraryWording.replaceLink)
    victim.expectUntouched()
    Planted.expectSymbolicLink(at: target, to: victim.path)
    #expect(try place.names() == ["f"])
    #expect(server.requests.isEmpty)

    // Asked to replace it, Haul replaces the link itself (rename(2) never follows one).
    let replaced = try await Self.run(server, to: target, overwrite: true)
    #expect(replaced.error == nil, "\(replaced.result)")
    #expect(try Victim.status(target).st_mode & S_IFMT == S_IFREG)
    #expect(DownloadTests.holds(URL(fileURLWithPath: target), Self.body))
    victim.expectUntouched()
  }

  /// With a directory as destination the name comes from the response; the same rules apply
  /// when the files are opened then.
  @Test func aSymbolicLinkAtANameFromTheServerIsRefused() async throws {
    let server = try Self.serve()
    server.setResource("/d/file.bin", TestResource(body: Self.body))
    let place = try Place()
    let victim = try Victim(at: place.victim())
    let planted = place.inside("file.bin.part")
    try Planted.symbolicLink(at: planted, to: victim.path)

    let outcome = try await DownloadTests.run(
      server.url("/d/file.bin"), to: .directory(place.directory.url))
    Self.expectRefusal(outcome, Self.symbolicLinkMessage(planted))
    victim.expectUntouched()
    Planted.expectSymbolicLink(at: planted, to: victim.path)
    #expect(try place.names() == ["file.bin.part"])
  }

  // MARK: - Hard links

  /// `--overwrite` allows replacing a `.part` Haul did not make, never writing into a file that
  /// has other names.
  @Test func aHardLinkAtThePartFileIsRefusedEvenWithOverwrite() async throws {
    let server = try Self.serve()
    let place = try Place()
    let original = try Victim(at: place.victim())
    let planted = place.inside("f.part")
    try Planted.hardLink(at: planted, to: original.path)
    let victim = try original.planted()

    let outcome = try await Self.run(server, to: place.inside("f"), overwrite: true)
    Self.expectRefusal(
      outcome, "\(planted) has 2 hard links; haul does not write into a file that has other names")
    victim.expectUntouched()
    Planted.expectHardLink(at: planted, to: victim.path)
    #expect(try place.names() == ["f.part"])
  }

  /// The attacker also writes a state file that claims the `.part` for this URL.
  @Test func aHardLinkAtThePartFileIsRefusedWithAStateThatClaimsIt() async throws {
    let server = try Self.serve()
    let place = try Place()
    let original = try Victim(at: place.victim())
    let planted = place.inside("f.part")
    try Planted.hardLink(at: planted, to: original.path)
    let victim = try original.planted()
    var state = ResumeState(url: server.url("/f"))
    state.totalBytes = Int64(Self.body.count)
    state.etag = Self.etag
    try Data(StateJournal.encode(state)).write(to: URL(fileURLWithPath: place.inside("f.haul")))

    let outcome = try await Self.run(server, to: place.inside("f"))
    Self.expectRefusal(
      outcome, "\(planted) has 2 hard links; haul does not write into a file that has other names")
    victim.expectUntouched()
    Planted.expectHardLink(at: planted, to: victim.path)
  }

  @Test func aHardLinkAtTheStateFileIsRefused() async throws {
    let server = try Self.serve()
    let place = try Place()
    let original = try Victim(at: place.victim())
    let planted = place.inside("f.haul")
    try Planted.hardLink(at: planted, to: original.path)
    let victim = try original.planted()

    let outcome = try await Self.run(server, to: place.inside("f"))
    Self.expectRefusal(
      outcome, "\(planted) has 2 hard links; haul does not write into a file that has other names")
    victim.expectUntouched()
    Planted.expectHardLink(at: planted, to: victim.path)
    #expect(try place.names() == ["f.haul"])
    #expect(server.requests.isEmpty)
  }

  // MARK: - Together, and other kinds of file

  @Test func linksAtEveryNameTogetherAreRefused() async throws {
    let server = try Self.serve()
    let place = try Place()
    let part = try Victim(at: place.victim("a"))
    let stateOriginal = try Victim(at: place.victim("b"))
    let temporary = try Victim(at: place.victim("c"))
    let target = place.inside("f")
    try Planted.symbolicLink(at: target + ".part", to: part.path)
    try Planted.hardLink(at: target + ".haul", to: stateOriginal.path)
    try Planted.symbolicLink(at: target + ".haul.tmp", to: temporary.path)
    let state = try stateOriginal.planted()

    for overwrite in [false, true] {
      let outcome = try await Self.run(server, to: target, overwrite: overwrite)
      Self.expectRefusal(outcome, Self.symbolicLinkMessage(target + ".part"))
    }
    for victim in [part, state, temporary] { victim.expectUntouched() }
    Planted.expectSymbolicLink(at: target + ".part", to: part.path)
    Planted.expectHardLink(at: target + ".haul", to: state.path)
    Planted.expectSymbolicLink(at: target + ".haul.tmp", to: temporary.path)
    #expect(try place.names() == ["f.haul", "f.haul.tmp", "f.part"])
    #expect(server.requests.isEmpty)
  }

  @Test func aFIFOAtThePartFileIsRefused() async throws {
    let server = try Self.serve()
    let place = try Place()
    let planted = place.inside("f.part")
    try #require(mkfifo(planted, 0o644) == 0)

    let outcome = try await Self.run(server, to: place.inside("f"))
    Self.expectRefusal(outcome, "\(planted) is a FIFO, not a regular file; haul writes only regular files")
    #expect(try Victim.status(planted).st_mode & S_IFMT == S_IFIFO)
    #expect(server.requests.isEmpty)
  }

  @Test(.enabled(if: geteuid() == 0, "needs root, to give a file to another user; skipped"))
  func aPartFileOfAnotherUserIsRefused() async throws {
    let server = try Self.serve()
    let place = try Place()
    let planted = place.inside("f.part")
    try Data("another user's bytes".utf8).write(to: URL(fileURLWithPath: planted))
    try #require(chown(planted, 1001, 1001) == 0)
    let theirs = try Victim(at: planted, existing: true)
    var state = ResumeState(url: server.url("/f"))
    state.totalBytes = Int64(Self.body.count)
    state.etag = Self.etag
    try Data(StateJournal.encode(state)).write(to: URL(fileURLWithPath: place.inside("f.haul")))

    let outcome = try await Self.run(server, to: place.inside("f"))
    Self.expectRefusal(
      outcome, "\(planted) is owned by uid 1001, not by uid 0 that runs haul; haul reuses only its own files")
    theirs.expectUntouched()
    #expect(try Victim.status(planted).st_uid == 1001)
  }

  // MARK: - The directory, before the first request

  @Test(.enabled(if: UnwritableDirectory.available, "cannot make an unwritable directory here; skipped"))
  func aDirectoryThatCannotBeWrittenIsFoundBeforeAnyRequest() async throws {
    let server = try Self.serve()
    let unwritable = try UnwritableDirectory()
    let reason = unwritable.mounted ? "is on a read-only file system" : "permission denied"

    let into = try await DownloadTests.run(server.url("/f"), to: .directory(unwritable.url))
    #expect(into.error?.category == .fileSystem)
    #expect(into.error?.message.contains(unwritable.url.path) == true, "\(into.result)")
    #expect(into.error?.message.contains(reason) == true, "\(into.result)")

    let named = try await Self.run(server, to: unwritable.url.appendingPathComponent("f").path)
    #expect(named.error?.category == .fileSystem)
    #expect(named.error?.message.contains(reason) == true, "\(named.result)")
    #expect(server.requests.isEmpty, "no request before the directory is known to be writable")
  }
}
