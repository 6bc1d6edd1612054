import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// `continuePartial` (`--continue`, issue 16): a partial Haul did not make is resumed from its
/// size, protected by the overlap check; without the flag it is refused and left alone.
@Suite struct ContinueAdoptionTests {
  typealias Run = DownloadTests

  static func options(continuing: Bool = true) -> DownloadOptions {
    var options = Run.fastOptions()
    options.continuePartial = continuing
    return options
  }

  /// The state file was deleted, the `.part` kept.
  @Test func aPartWithoutItsStateIsContinued() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 500_000, seed: 120)
    server.setResource("/f", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try Data(body[0..<200_000]).write(to: URL(fileURLWithPath: file.path + ".part"))
    let refused = try await Run.run(
      server.url("/f"), to: .file(file), options: Self.options(continuing: false))
    #expect(refused.error?.category == .fileSystem)
    #expect(refused.error?.hint?.contains("continuePartial") == true)
    server.clearRequests()
    let outcome = try await Run.run(server.url("/f"), to: .file(file), options: Self.options())
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 200_000)
    #expect(outcome.started.first?.resumedFrom == 200_000)
    // Nothing binds the adopted bytes: the end of them is asked for again and compared.
    #expect(server.requests(for: "/f").first?.header("Range") == "bytes=\(200_000 - 65_536)-")
    #expect(!Run.exists(file.path + ".part") && !Run.exists(file.path + ".haul"))
  }

  /// A partial left by `curl -o f` or `wget` at the target name itself.
  @Test func anotherToolsPartialAtTheTargetIsContinued() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 400_000, seed: 121)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try Data(body[0..<150_000]).write(to: file)
    let refused = try await Run.run(
      server.url("/f"), to: .file(file), options: Self.options(continuing: false))
    #expect(refused.error?.hint?.contains("continuePartial") == true)
    do {
      let same = Run.holds(file, Array(body[0..<150_000]))
      #expect(same, "the refused partial was changed")
    }
    let outcome = try await Run.run(server.url("/f"), to: .file(file), options: Self.options())
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 150_000)
    #expect(outcome.restarts.isEmpty)
  }

  /// The partial is not of the server's file (it changed since, or is another file): the
  /// download stops and the user's file is left as it was, under its own name, with no state
  /// claiming its bytes. Likewise a partial longer than the server's file, and a server that
  /// cannot serve ranges.
  @Test(arguments: ["changed", "longer", "no ranges"])
  func aPartialThatIsNotTheServersFileIsLeftAsItWas(_ kind: String) async throws {
    let server = try TestServer()
    let old = TestResource.random(size: 400_000, seed: 122)
    let new = TestResource.random(size: 400_000, seed: 123)
    let local: [UInt8]
    switch kind {
    case "changed":
      server.setResource("/f", TestResource(body: new, etag: "\"v2\""))
      local = Array(old[0..<150_000])
    case "longer":
      server.setResource("/f", TestResource(body: Array(new[0..<100_000]), etag: "\"v2\""))
      local = Array(new[0..<100_000]) + Array(old[0..<300_000])
    default:
      server.setResource("/f", TestResource(body: new, faults: TestFaults(ignoreRange: true)))
      local = Array(new[0..<150_000])
    }
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try Data(local).write(to: file)
    let outcome = try await Run.run(server.url("/f"), to: .file(file), options: Self.options())
    let error = try #require(outcome.error)
    #expect(error.category == .fileSystem && error.underlying is UnprovenPartial, "\(error)")
    #expect(error.message.contains("left as it was") && error.hint == LibraryWording.replaceForeignPartial)
    if kind == "no ranges" {
      #expect(error.message.contains("with the whole file (as a server that cannot resume does)"), "\(error)")
    }
    do {
      let same = Run.holds(file, local)
      #expect(same, "the user's file changed")
    }
    #expect(outcome.restarts.isEmpty)
    #expect(!Run.exists(file.path + ".part") && !Run.exists(file.path + ".haul"))
    // The same for a `.part` without its state: kept, and no state claims it.
    try FileManager.default.moveItem(atPath: file.path, toPath: file.path + ".part")
    let again = try await Run.run(server.url("/f"), to: .file(file), options: Self.options())
    #expect(again.error?.underlying is UnprovenPartial)
    do {
      let same = Run.holds(URL(fileURLWithPath: file.path + ".part"), local)
      #expect(same, "the .part changed")
    }
    #expect(!Run.exists(file.path) && !Run.exists(file.path + ".haul"))
  }

  /// A directory destination: the name comes from the first answer, which asks for the whole
  /// file; the partial found under that name is continued by a second request for the rest,
  /// not replaced by the first (`RoundEnd.replan`).
  @Test func aPartialFoundByNameIsContinuedNotFetchedAgain() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 126)
    server.setResource("/f", TestResource(body: body, etag: "\"v1\""))
    let directory = try TemporaryDirectory()
    try Data(body[0..<1_500_000]).write(to: directory.file("f"))
    let outcome = try await Run.run(server.url("/f"), to: .directory(directory.url), options: Self.options())
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    #expect(outcome.value?.resumedFrom == 1_500_000)
    #expect(outcome.started.first?.resumedFrom == 1_500_000)
    #expect(outcome.restarts.isEmpty)
    let ranges = server.requests(for: "/f").map { $0.header("Range") }
    #expect(ranges == [nil, "bytes=\(1_500_000 - 65_536)-"], "\(ranges)")
  }

  /// A partial that already holds the whole file completes without fetching it again.
  @Test func aCompleteForeignFileCompletes() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 300_000, seed: 124)
    server.setResource("/f", TestResource(body: body))
    let directory = try TemporaryDirectory()
    let file = directory.file("f")
    try Data(body).write(to: URL(fileURLWithPath: file.path + ".part"))
    server.clearRequests()
    let outcome = try await Run.run(server.url("/f"), to: .file(file), options: Self.options())
    #expect(outcome.error == nil)
    do {
      let same = Run.holds(file, body)
      #expect(same, "file bytes differ")
    }
    #expect(server.requests(for: "/f").count == 1)
  }

  /// A symbolic link at the target is never adopted (nor followed).
  @Test func aLinkAtTheTargetIsNotAdopted() async throws {
    let server = try TestServer()
    server.setResource("/f", TestResource(body: TestResource.random(size: 1_000, seed: 125)))
    let directory = try TemporaryDirectory()
    let victim = directory.file("victim")
    try Data("precious".utf8).write(to: victim)
    let file = directory.file("f")
    try FileManager.default.createSymbolicLink(at: file, withDestinationURL: victim)
    let outcome = try await Run.run(server.url("/f"), to: .file(file), options: Self.options())
    #expect(outcome.error?.category == .fileSystem)
    do {
      let same = Run.holds(victim, Array("precious".utf8))
      #expect(same, "the victim changed")
    }
    #expect(!Run.exists(file.path + ".part"))
  }
}
