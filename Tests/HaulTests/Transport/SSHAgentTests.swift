import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// libssh2 1.10 closes its agent socket twice when the connection to the agent fails, so SFTP
/// offers ssh-agent to libcurl only when `SSH_AUTH_SOCK` names a socket that answers.
@Suite struct SSHAgentTests {
  @Test func onlyASocketThatAcceptsCountsAsAnAgent() throws {
    let directory = try TemporaryDirectory()
    let socketPath = directory.file("agent.sock").path
    let listener = try Self.listeningSocket(at: socketPath)
    #expect(SFTPTransfer.agentAnswers(at: socketPath))

    close(listener)  // the socket file stays: a stale SSH_AUTH_SOCK
    #expect(FileManager.default.fileExists(atPath: socketPath))
    #expect(!SFTPTransfer.agentAnswers(at: socketPath))

    let plain = directory.file("plain")
    try Data("not a socket".utf8).write(to: plain)
    #expect(!SFTPTransfer.agentAnswers(at: plain.path))
    #expect(!SFTPTransfer.agentAnswers(at: directory.file("missing.sock").path))
    #expect(!SFTPTransfer.agentAnswers(at: ""))
    #expect(!SFTPTransfer.agentAnswers(at: nil))
    #expect(!SFTPTransfer.agentAnswers(at: "/" + String(repeating: "a", count: 200)))
  }

  /// A listening Unix socket at `path`.
  private static func listeningSocket(at path: String) throws -> Int32 {
    #if canImport(Glibc)
      let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    #else
      let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
    #endif
    try #require(descriptor >= 0)
    let bound = UnixSocketAddress.with(path: path) { bind(descriptor, $0, $1) }
    let listening = bound == 0 && listen(descriptor, 4) == 0
    let code = errno
    if !listening { close(descriptor) }
    try #require(bound != nil, "too long for a socket address: \(path)")
    try #require(listening, "bind/listen \(path): errno \(code)")
    return descriptor
  }
}
