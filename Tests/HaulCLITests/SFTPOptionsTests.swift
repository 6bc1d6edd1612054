import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulCLI

/// `--key` (as curl: the TLS client key, and SFTP's private key) and `--pubkey` reach the
/// library's `TLSOptions`, also when the environment names CA files.
@Suite("Command-line parsing: SFTP keys")
struct SFTPOptionsTests {
  @Test func keyPair() throws {
    let directory = try TemporaryDirectory()
    let key = directory.file("id_ed25519").path
    let publicKey = directory.file("id_ed25519.pub").path
    try Data("x".utf8).write(to: directory.file("id_ed25519"))
    try Data("x".utf8).write(to: directory.file("id_ed25519.pub"))
    guard
      case .download(let parsed) = try CommandLineOptions.parse([
        "--key", key, "--pubkey", publicKey, "sftp://joe@example.com/f.iso",
      ])
    else {
      Issue.record("expected a download request")
      return
    }
    #expect(parsed.downloadOptions.tls.clientKey == key)
    #expect(parsed.downloadOptions.tls.sshPublicKey == publicKey)
    let trusted = CommandLineOptions.trust(
      parsed.tls, environment: { $0 == "CURL_CA_BUNDLE" ? "/b.pem" : nil })
    #expect(trusted == TLSOptions(caFile: "/b.pem", clientKey: key, sshPublicKey: publicKey))

    do {
      _ = try CommandLineOptions.parse(["--pubkey", directory.file("missing").path, "sftp://h/f"])
      Issue.record("a missing --pubkey file was accepted")
    } catch {
      #expect(error.message.contains("--pubkey: cannot read"), "\(error.message)")
    }
  }
}
