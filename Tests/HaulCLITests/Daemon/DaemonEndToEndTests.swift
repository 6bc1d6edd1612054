import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `haul daemon` as a user runs it: the built binary, real HTTP, curl for the error cases.
@Suite("haul daemon end to end", .serialized)
struct DaemonEndToEndTests {
  @Test func addPauseUnpauseAndComplete() async throws {
    let directory = try TemporaryDirectory()
    let server = try TestServer()
    defer { server.stop() }
    let body = TestResource.random(size: 2 << 20, seed: 7)
    // The first response goes silent after 512 KiB, so the download is still running when it is
    // paused however slow the machine; the stall timeout (600 s) does not end it first.
    server.setResource(
      "/big.bin",
      TestResource(body: body, etag: "\"7\"", faults: TestFaults(stallAfterBytes: 512 << 10, stallTimes: 1)))
    let daemon = try await DaemonProcess.start(in: directory)
    let gid = try await daemon.call(
      "aria2.addUri", [[.string(server.url("/big.bin"))], ["split": "1", "timeout": "600"]])
    try await daemon.waitFor([gid], status: "active")
    // Some bytes arrived before the pause, so that the unpause has something to resume from.
    let deadline = ContinuousClock.now + .seconds(60)
    while Int(
      try await daemon.call("aria2.tellStatus", [gid, ["completedLength"]])["completedLength"]?.string ?? "")
      ?? 0 == 0
    {
      try #require(ContinuousClock.now < deadline, "no bytes arrived")
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(try await daemon.call("aria2.pause", [gid]) == gid)
    try await daemon.waitFor([gid], status: "paused")
    let held = try await daemon.call("aria2.tellStatus", [gid, ["completedLength"]])["completedLength"]?
      .string
    #expect(try await daemon.call("aria2.unpause", [gid]) == gid)
    try await daemon.waitFor([gid], status: "complete")
    let outcome = await daemon.stop()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      FileManager.default.contents(atPath: directory.file("downloads/big.bin").path).map(Array.init) == body)
    // The unpause resumed from the bytes held.
    let resumed = server.requests(for: "/big.bin").compactMap { $0.headers["Range"] }
    #expect(!resumed.isEmpty, "held \(held ?? "?") bytes, but no range request after the unpause")
    #expect(outcome.stderr.contains(": 0 downloads in "), "\(outcome)")
    // Started again on that catalog, it counts the one download it holds.
    let again = await (try DaemonProcess.start(in: directory)).stop()
    #expect(again.stderr.contains(": 1 download in "), "\(again)")
  }

  @Test func withoutASecretOneIsMadeOnceAndKeptPrivate() async throws {
    let directory = try TemporaryDirectory()
    let data = directory.file("data")
    let first = try await DaemonProcess.start(
      in: directory, environment: ["XDG_DATA_HOME": data.path], secret: nil)
    let firstOutcome = await first.stop()
    let secretFile = data.appendingPathComponent("haul/rpc-secret")
    let secret = try String(contentsOf: secretFile, encoding: .utf8).trimmingCharacters(in: .newlines)
    var info = stat()
    #expect(stat(secretFile.path, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(secret.count == 32)
    #expect(firstOutcome.stderr.contains(secretFile.path))
    #expect(firstOutcome.stderr.contains("made now"))
    #expect(!firstOutcome.stderr.contains(secret), "the secret itself is not printed")
    #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("haul/catalog.sqlite").path))

    let second = try await DaemonProcess.start(
      in: directory, environment: ["XDG_DATA_HOME": data.path], secret: nil)
    let client = try await RPCClient.connect(port: second.port, secret: secret)
    let version = try await client.call("aria2.getVersion")
    await client.close()
    let secondOutcome = await second.stop()
    #expect(version["version"] != nil)
    #expect(!secondOutcome.stderr.contains("made now"))
  }

  @Test func curlErrorCases() async throws {
    let directory = try TemporaryDirectory()
    let daemon = try await DaemonProcess.start(in: directory)
    let url = "http://127.0.0.1:\(daemon.port)/jsonrpc"
    let malformed = try await curl([url, "-d", #"{"jsonrpc":"2.0","id":1,"method""#])
    let wrongToken = try await curl([
      url, "-d", #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:nope"]}"#,
    ])
    let badHost = try await curl([
      url, "-H", "Host: attacker.example", "-d", #"{"id":1,"method":"system.listMethods"}"#,
    ])
    let hugeFile = directory.file("huge.json")
    try Data(repeating: 0x20, count: 3 << 20).write(to: hugeFile)
    let huge = try await curl([url, "--data-binary", "@" + hugeFile.path])
    let wrongType = try await curl([
      url, "-d", #"{"id":1,"method":"aria2.tellStatus","params":["token:\#(DaemonProcess.secret)",7]}"#,
    ])
    let unknown = try await curl([
      url, "-d", #"{"id":1,"method":"aria2.fly","params":["token:\#(DaemonProcess.secret)"]}"#,
    ])
    let fine = try await curl([
      url, "-d", #"{"id":1,"method":"aria2.getGlobalStat","params":["token:\#(DaemonProcess.secret)"]}"#,
    ])
    let outcome = await daemon.stop()
    #expect(malformed.status == 500)
    #expect(malformed.body.contains(#""code":-32700"#))
    #expect(wrongToken.status == 400)
    #expect(wrongToken.body == #"{"id":1,"jsonrpc":"2.0","error":{"code":1,"message":"Unauthorized"}}"#)
    #expect(badHost.status == 421)
    #expect(huge.status == 413)
    #expect(wrongType.body.contains("The parameter at 0 has wrong type."))
    #expect(unknown.body.contains("No such method: aria2.fly"))
    #expect(fine.status == 200)
    #expect(fine.body.contains(#""numActive":"0""#))
    #expect(outcome.status == 0, "\(outcome)")
  }

  @Test func aThousandIdleConnectionsAndOthersAreStillServed() async throws {
    // The daemon inherits this process's limit and holds 1,000 connections.
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < 2200 {
      limit.rlim_cur = min(2200, limit.rlim_max)
      setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    try #require(limit.rlim_cur >= 2200, "this machine allows only \(limit.rlim_cur) open files")
    let directory = try TemporaryDirectory()
    let daemon = try await DaemonProcess.start(in: directory)
    let port = daemon.port
    // Held by a child process (see IdleConnections), so this process keeps its descriptors.
    let idle = try await IdleConnections.open(1000, to: Int(port))
    var statuses: [Int] = []
    for _ in 0..<5 {
      statuses.append(
        try await curl([
          "http://127.0.0.1:\(port)/jsonrpc", "-d",
          #"{"id":1,"method":"aria2.getVersion","params":["token:\#(DaemonProcess.secret)"]}"#,
        ]).status)
    }
    let version = try await daemon.call("aria2.getVersion")
    await idle.close()
    let outcome = await daemon.stop()
    #expect(statuses == [200, 200, 200, 200, 200])
    #expect(version["version"] != nil)
    #expect(outcome.status == 0, "\(outcome)")
  }

  @Test func shutdownOverRPCEndsTheProcess() async throws {
    let directory = try TemporaryDirectory()
    let daemon = try await DaemonProcess.start(in: directory)
    #expect(try await daemon.call("aria2.shutdown") == "OK")
    let outcome = await boundedWait(daemon.child)
    await daemon.client.close()
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr.contains("stopping"))
  }

  @Test func aSecondDaemonOnTheSameCatalogIsRefused() async throws {
    let directory = try TemporaryDirectory()
    let first = try await DaemonProcess.start(in: directory)
    let binary = try #require(BinaryTests.binary)
    let second = try await ChildProcess.start(
      binary,
      [
        "daemon", "--catalog", directory.file("catalog.sqlite").path, "--rpc-listen-port", "0",
        "--rpc-secret", "x",
      ]
    ).wait()
    _ = await first.stop()
    #expect(second.status != 0)
    #expect(second.stderr.contains("in use by process"), "\(second)")
  }

  @Test func usageErrors() async throws {
    let both = try await runHaul(["daemon", "--rpc-secret", "a", "--rpc-secret-file", "/x"])
    let port = try await runHaul(["daemon", "--rpc-listen-port", "70000"])
    let help = try await runHaul(["daemon", "--help"])
    let exposed = try await runHaul(["daemon", "--rpc-listen-all", "--rpc-listen-port", "0"])
    #expect(exposed.status == 2)
    #expect(exposed.stderr.contains("--rpc-listen-all needs --rpc-secret"), "\(exposed)")
    #expect(both.status == 2)
    #expect(both.stderr.contains("one or the other"))
    #expect(port.status == 2)
    #expect(help.status == 0)
    #expect(help.stdout.contains("--rpc-listen-all"))
  }
}
