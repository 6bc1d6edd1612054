import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// SFTP through libcurl (libssh2), resumed with the same state and validators as HTTP and FTP:
/// the file's size and modification time stand for Content-Range's total and Last-Modified. The
/// server's host key must be in known_hosts. Each test starts its own OpenSSH server (Debian:
/// openssh-server) on a free loopback port, with its own host key and an authorized client key;
/// `haul` runs with HOME in a temporary directory holding `.ssh/known_hosts` and `.ssh/id_ed25519`.
@Suite(
  "SFTP downloads, resume and host keys", .timeLimit(.minutes(3)),
  .enabled(
    if: SSHServer.isInstalled || TestEnvironment.isCI,
    "sshd is not installed (Debian: openssh-server); skipped"))
struct SFTPTests {
  @Test func fullAndSegmentedDownloads() async throws {
    let server = try await SSHServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 4 << 20, seed: 91)
    try server.publish("f.bin", body, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    for connections in ["1", "4"] {
      let before = try await server.settledLog()
      // The rate limit leaves the other connections time to start before the first one is done.
      let outcome = try await server.haul([
        "--json", "-x", connections, "--limit-rate", "4M", "--timeout", "60", "-o",
        directory.file("f\(connections).bin").path,
        server.url("f.bin"),
      ])
      #expect(outcome.status == 0, "\(outcome)")
      expectBytes(directory.contents("f\(connections).bin"), equal: body)
      #expect(outcome.event("started")?["total"] == String(body.count))
      // About a second at 4 MB/s. Bytes libssh2 had read ahead once waited out the stall
      // timeout (here 60 s) after a rate-limit pause; a bound far from both, not a speed.
      let seconds = try #require(outcome.event("completed")?["seconds"].flatMap { Double($0) })
      #expect(seconds < 30, "no transfer may wait out the stall timeout: \(outcome)")
      if connections == "4" {
        // Segments are SFTP reads of byte ranges, each a session of its own.
        let reads = try await server.reads(after: before)
        #expect(reads.sessions > 1, "\(server.sftpLog)")
      }
    }
    let missing = try await server.haul(["-q", "-o", directory.file("x.bin").path, server.url("none.bin")])
    #expect(missing.status == 8, "a missing file is the server's 404: \(missing)")
    #expect(missing.stderr.contains("404"), "\(missing)")
  }

  /// `--key` names the key to log in with (as curl's); one the server does not know is refused.
  @Test func explicitAndRefusedKeys() async throws {
    let server = try await SSHServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 100_000, seed: 92)
    try server.publish("k.bin", body, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    try FileManager.default.removeItem(at: server.home.file(".ssh/id_ed25519"))
    let fetched = try await server.haul([
      "-q", "--key", server.clientKey.path, "-o", directory.file("k.bin").path, server.url("k.bin"),
    ])
    #expect(fetched.status == 0, "\(fetched)")
    expectBytes(directory.contents("k.bin"), equal: body)

    let stranger = server.root.file("stranger")
    try SSHServer.keygen(stranger)
    let refused = try await server.haul([
      "-q", "--key", stranger.path, "-o", directory.file("s.bin").path, server.url("k.bin"),
    ])
    #expect(refused.status == 6, "a refused login is an authentication error: \(refused)")
    #expect(!directory.exists("s.bin") && !directory.exists("s.bin.part"))
  }

  /// Interrupted, then run again: only the rest is read, and the file is exact. When the file
  /// changed on the server in between (same size, another modification time), the rerun starts
  /// over instead of splicing. A password in the URL never reaches the state file.
  @Test func resumeAndChangedFile() async throws {
    let server = try await SSHServer.start()
    defer { server.stop() }
    let old = TestResource.random(size: 4 << 20, seed: 93)
    try server.publish("r.bin", old, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    let url = server.url("r.bin", password: "hunter2-secret")
    let arguments = ["--json", "-x", "1", "-o", directory.file("r.bin").path, url]

    let held = try await HaulBinary.interrupt(
      arguments, part: directory.file("r.bin.part"), start: server.startHaul)
    let state = try #require(FileManager.default.contents(atPath: directory.file("r.bin.haul").path))
    #expect(
      !String(decoding: state, as: UTF8.self).contains("hunter2"), "the password reached the state file")
    let before = try await server.settledLog()
    let resumed = try await server.haul(arguments)
    #expect(resumed.status == 0, "\(resumed)")
    expectBytes(directory.contents("r.bin"), equal: old)
    let from = Int64(resumed.event("started")?["resumed_from"] ?? "") ?? 0
    let rest = Int64(old.count) - from
    #expect(from >= held && from > 0, "resumed from \(from), held \(held): \(resumed)")
    #expect(resumed.event("completed")?["received"] == String(rest), "\(resumed)")
    // What the server read for the rerun: the rest, not the whole file.
    let reads = try await server.reads(after: before)
    #expect(
      reads.bytes == rest, "the server read \(reads.bytes) bytes for the \(rest) missing: \(server.sftpLog)")

    try FileManager.default.removeItem(at: directory.file("r.bin"))
    _ = try await HaulBinary.interrupt(arguments, part: directory.file("r.bin.part"), start: server.startHaul)
    let new = TestResource.random(size: 4 << 20, seed: 94)  // same size: only the time tells them apart
    try server.publish("r.bin", new, modified: Date(timeIntervalSince1970: 1_700_003_600))
    let restarted = try await server.haul(arguments)
    #expect(restarted.status == 0, "\(restarted)")
    expectBytes(directory.contents("r.bin"), equal: new, "old bytes were spliced to new ones")
    #expect(restarted.eventNames.contains("restarted"), "\(restarted)")
    #expect(restarted.event("started")?["resumed_from"] == "0", "\(restarted)")

    let again = try await server.haul(arguments)
    #expect(again.event("completed")?["already_complete"] == "1", "a rerun fetches nothing: \(again)")
  }

  /// Like ssh and curl: a host whose key known_hosts lacks, or holds another key for, is refused
  /// (the TLS/trust exit status) with the key's fingerprint; `--insecure` skips the check and warns.
  @Test func hostKeys() async throws {
    let server = try await SSHServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 100_000, seed: 95)
    try server.publish("h.bin", body, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    let target = directory.file("h.bin").path
    let fingerprint = try server.hostKeyFingerprint()
    let knownHosts = server.home.file(".ssh/known_hosts")

    try Data().write(to: knownHosts)
    let unknown = try await server.haul(["-o", target, server.url("h.bin")])
    #expect(unknown.status == 5, "\(unknown)")
    #expect(
      unknown.stderr.contains("SSH host key unknown") && unknown.stderr.contains(fingerprint), "\(unknown)")
    #expect(!directory.exists("h.bin") && !directory.exists("h.bin.part"))
    // Said as SSH's problem, not TLS's, with SSH's way out.
    #expect(!unknown.stderr.contains("TLS") && !unknown.stderr.contains("certificate"), "\(unknown)")
    #expect(unknown.stderr.contains("--insecure skips the host key check"), "\(unknown)")

    try FileManager.default.removeItem(at: knownHosts)
    let noFile = try await server.haul(["-o", target, server.url("h.bin")])
    #expect(noFile.status == 5 && noFile.stderr.contains("SSH host key unknown"), "\(noFile)")

    // Another key for this host and port: as if someone else answered.
    let other = server.root.file("other")
    try SSHServer.keygen(other)
    try server.trust(publicKey: other.appendingPathExtension("pub"))
    let changed = try await server.haul(["-o", target, server.url("h.bin")])
    #expect(changed.status == 5, "\(changed)")
    #expect(
      changed.stderr.contains("SSH host key changed") && changed.stderr.contains(fingerprint), "\(changed)")

    let insecure = try await server.haul(["--insecure", "-o", target, server.url("h.bin")])
    #expect(insecure.status == 0, "\(insecure)")
    #expect(
      insecure.stderr.contains("warning: --insecure") && insecure.stderr.contains("SSH host keys"),
      "\(insecure)")
    expectBytes(directory.contents("h.bin"), equal: body)
  }

  /// `-N` over SFTP: the file's time against the local file's.
  @Test func newerOnly() async throws {
    let server = try await SSHServer.start()
    defer { server.stop() }
    let body = TestResource.random(size: 100_000, seed: 96)
    try server.publish("n.bin", body, modified: Date(timeIntervalSince1970: 1_700_000_000))
    let directory = try TemporaryDirectory()
    let local = directory.file("n.bin")
    try Data("local copy".utf8).write(to: local)
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_800_000_000)], ofItemAtPath: local.path)
    let kept = try await server.haul(["-N", "-o", local.path, server.url("n.bin")])
    #expect(kept.status == 0 && kept.stderr.contains("not newer on the server, kept"), "\(kept)")
    #expect(directory.contents("n.bin") == Array("local copy".utf8))

    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_600_000_000)], ofItemAtPath: local.path)
    let fetched = try await server.haul(["-q", "-N", "-o", local.path, server.url("n.bin")])
    #expect(fetched.status == 0, "\(fetched)")
    expectBytes(directory.contents("n.bin"), equal: body)
  }
}
