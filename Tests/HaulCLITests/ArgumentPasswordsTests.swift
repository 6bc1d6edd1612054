import Foundation
import HaulTestSupport
import Testing

@testable import HaulCLI

/// A queue URL's password is blanked in the process's argument memory (what `ps` shows).
@Suite struct ArgumentPasswordsTests {
  @Test(arguments: [
    ("postgresql://haul:s3cret@db:5432/haul", "s3cret"), ("--queue=POSTGRES://u:p%40ss@h/db", "p%40ss"),
    ("postgresql://u:a@b@h/db", "a@b"), ("postgresql://u:pw@h/db?sslmode=require", "pw"),
  ])
  func thePasswordIsFound(argument: String, password: String) throws {
    let bytes = Array(argument.utf8)
    let range = try #require(ArgumentPasswords.passwordRange(in: bytes))
    #expect(String(decoding: bytes[range], as: UTF8.self) == password)
  }

  @Test(arguments: ["postgresql://haul@db/haul", "postgresql://db/haul", "https://u:p@h/f", "-j", ""])
  func noPasswordNoRange(argument: String) {
    #expect(ArgumentPasswords.passwordRange(in: Array(argument.utf8)) == nil)
  }

  /// End to end: while `haul worker` waits for an unreachable queue, its command line in /proc
  /// shows no password.
  @Test func aRunningWorkerShowsNoPassword() async throws {
    let binary = try #require(BinaryTests.binary)
    let listener = try TestServer()  // a loopback port that does not speak PostgreSQL
    let url = "postgresql://haul:Sup3rSecret@127.0.0.1:\(listener.port)/haul"
    let process = try ChildProcess.start(binary, ["worker", "--queue", url])
    // Until main has run (the first moments after exec still show it), at most 5 s: the
    // listener never answers the PostgreSQL handshake, so the worker waits meanwhile.
    var shown = ""
    for _ in 0..<250 {
      if let data = FileManager.default.contents(atPath: "/proc/\(process.pid)/cmdline") {
        shown = String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
        if shown.contains("xxxxxxxxxxx") { break }
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    process.signal(SIGKILL)
    _ = await process.wait()
    #expect(shown.contains("postgresql://haul:xxxxxxxxxxx@127.0.0.1"), "\(shown)")
    #expect(!shown.contains("Sup3rSecret"), "\(shown)")
  }
}
