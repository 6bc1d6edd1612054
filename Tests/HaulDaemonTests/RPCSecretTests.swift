import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulDaemon

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where the secret comes from: a file the user names is held to the kept file's rule (only its
/// owner may read it), since the daemon says so at start.
@Suite struct RPCSecretTests {
  private func file(_ directory: TemporaryDirectory, mode: mode_t) throws -> String {
    let path = directory.file("secret").path
    try Data("s3cret\nignored\n".utf8).write(to: URL(fileURLWithPath: path))
    #expect(chmod(path, mode) == 0)
    return path
  }

  @Test(arguments: [mode_t(0o644), 0o640, 0o604, 0o620])
  func aGivenFileOthersCanReachIsRefusedAsTheKeptOneIs(mode: mode_t) throws {
    let directory = try TemporaryDirectory()
    let given = try file(directory, mode: mode)
    let error = try #require(throws: HaulError.self) { try RPCSecret.load(.file(given)) }
    #expect(error.category == .fileSystem)
    #expect(error.message == "\(given) can be read by other users (mode \(String(mode, radix: 8)))")
    #expect(error.hint == "chmod 600 \(given)")

    let kept = directory.file("rpc-secret").path
    try Data("k\n".utf8).write(to: URL(fileURLWithPath: kept))
    #expect(chmod(kept, mode) == 0)
    let keptError = try #require(throws: HaulError.self) { try RPCSecret.load(.generated(path: kept)) }
    #expect(keptError.category == error.category)
    #expect(keptError.message == "\(kept) can be read by other users (mode \(String(mode, radix: 8)))")
  }

  @Test func aGivenFileOnlyItsOwnerReadsGivesItsFirstLine() throws {
    let directory = try TemporaryDirectory()
    let given = try file(directory, mode: 0o600)
    let loaded = try RPCSecret.load(.file(given))
    #expect(loaded.secret == "s3cret")
    #expect(loaded.path == given)
    #expect(!loaded.created)
  }

  @Test func aGivenPipeIsRead() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    defer { close(ends[0]) }
    _ = Array("piped\n".utf8).withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
    close(ends[1])
    #expect(try RPCSecret.load(.file("/dev/fd/\(ends[0])")).secret == "piped")
  }
}
