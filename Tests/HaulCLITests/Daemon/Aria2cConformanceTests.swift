import Foundation
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The same calls to `aria2c --enable-rpc` and to `haul daemon`, and the shapes of the answers
/// compared (keys and JSON types, error codes and messages): compatibility checked against
/// the original rather than against our reading of its manual.
@Suite(
  "haul daemon against aria2c",
  .enabled(
    if: TestEnvironment.executable("/usr/bin/aria2c") != nil,
    "aria2c is not installed (Debian: aria2); skipped"))
struct Aria2cConformanceTests {
  /// What Haul does not report, and why: no piece bitfield (several connections write a file
  /// in any order; a bitfield would be a guess), and none of aria2's BitTorrent notification.
  static let allowedMissing: Set<String> = ["bitfield", "aria2.onBtDownloadComplete"]

  @Test func answersHaveAria2sShapes() async throws {
    let directory = try TemporaryDirectory()
    let server = try TestServer()
    defer { server.stop() }
    server.setResource(
      "/c.bin", TestResource(body: TestResource.random(size: 100_000, seed: 81), etag: "\"81\""))
    server.setResource(
      "/p.bin", TestResource(body: TestResource.random(size: 100_000, seed: 82), etag: "\"82\""))
    let haul = try await DaemonProcess.start(in: directory)
    let aria2 = try await Aria2cProcess.start(in: directory.file("aria2"))
    var differences: [String] = []
    func compare(_ what: String, _ method: String, _ haulParams: [JSONValue], _ aria2Params: [JSONValue])
      async
      -> (haul: JSONValue, aria2: JSONValue)
    {
      let mine = await outcome(haul.client, method, haulParams)
      let theirs = await outcome(aria2.client, method, aria2Params)
      // aria2 lists some 200 options; Haul only those it has: for options, the shared ones' types.
      let shared =
        method.hasSuffix("Option")
        ? theirs.object.map { theirs in
          JSONValue.object(
            JSONObject(theirs.members.filter { mine.object?[$0.key] != nil }.map { ($0.key, $0.value) }))
        } ?? theirs : theirs
      differences += Self.differences(mine, shared, at: what)
      return (mine, theirs)
    }
    let url = JSONValue.string(server.url("/c.bin"))
    let paused = JSONValue.string(server.url("/p.bin"))
    _ = await compare("getVersion", "aria2.getVersion", [], [])
    let added = await compare("addUri", "aria2.addUri", [[url]], [[url]])
    let gids = (haul: added.haul, aria2: added.aria2)
    try await haul.waitFor([gids.haul], status: "complete", seconds: 60)
    try await aria2.waitFor(gids.aria2, status: "complete")
    _ = await compare("tellStatus complete", "aria2.tellStatus", [gids.haul], [gids.aria2])
    let waiting = await compare(
      "addUri paused", "aria2.addUri", [[paused], ["pause": "true"]], [[paused], ["pause": "true"]])
    _ = await compare("tellStatus paused", "aria2.tellStatus", [waiting.haul], [waiting.aria2])
    _ = await compare(
      "tellStatus keys", "aria2.tellStatus", [waiting.haul, ["gid", "status"]],
      [waiting.aria2, ["gid", "status"]])
    _ = await compare("tellWaiting", "aria2.tellWaiting", [0, 10], [0, 10])
    _ = await compare("tellStopped", "aria2.tellStopped", [0, 10], [0, 10])
    _ = await compare("tellActive", "aria2.tellActive", [], [])
    _ = await compare("getGlobalStat", "aria2.getGlobalStat", [], [])
    _ = await compare("getFiles", "aria2.getFiles", [gids.haul], [gids.aria2])
    _ = await compare("getUris", "aria2.getUris", [waiting.haul], [waiting.aria2])
    _ = await compare("getPeers waiting", "aria2.getPeers", [waiting.haul], [waiting.aria2])
    _ = await compare("getPeers complete", "aria2.getPeers", [gids.haul], [gids.aria2])
    _ = await compare("getPeers unknown gid", "aria2.getPeers", ["0000000000000001"], ["0000000000000001"])
    _ = await compare(
      "changePosition", "aria2.changePosition", [waiting.haul, 0, "POS_SET"], [waiting.aria2, 0, "POS_SET"])
    _ = await compare(
      "changeOption", "aria2.changeOption", [waiting.haul, ["max-download-limit": "100K"]],
      [waiting.aria2, ["max-download-limit": "100K"]])
    let options = await compare("getOption", "aria2.getOption", [waiting.haul], [waiting.aria2])
    let global = await compare("getGlobalOption", "aria2.getGlobalOption", [], [])
    _ = await compare(
      "changeGlobalOption", "aria2.changeGlobalOption", [["max-concurrent-downloads": "3"]],
      [["max-concurrent-downloads": "3"]])
    _ = await compare("getSessionInfo", "aria2.getSessionInfo", [], [])
    // Errors: the same code and message.
    _ = await compare("unknown gid", "aria2.tellStatus", ["0000000000000001"], ["0000000000000001"])
    _ = await compare("wrong type", "aria2.tellStatus", [5], [5])
    _ = await compare("missing parameter", "aria2.tellStatus", [], [])
    _ = await compare("pause complete", "aria2.pause", [gids.haul], [gids.aria2])
    _ = await compare("unpause complete", "aria2.unpause", [gids.haul], [gids.aria2])
    _ = await compare(
      "bad position", "aria2.changePosition", [waiting.haul, 0, "POS_X"], [waiting.aria2, 0, "POS_X"])
    _ = await compare("unknown method", "aria2.fly", [], [])
    _ = await compare(
      "multicall", "system.multicall",
      [
        [
          ["methodName": "aria2.getGlobalStat", "params": [.string("token:" + DaemonProcess.secret)]],
          ["methodName": "aria2.getVersion"],
        ]
      ],
      [
        [
          ["methodName": "aria2.getGlobalStat", "params": [.string("token:" + Aria2cProcess.secret)]],
          ["methodName": "aria2.getVersion"],
        ]
      ])
    _ = await compare("remove", "aria2.remove", [waiting.haul], [waiting.aria2])
    // aria2c keeps no result for a download removed before it ever started; Haul lists it as
    // "removed" until it is forgotten (the state the manual describes), so the result compared
    // is the complete one's.
    _ = await compare("removeDownloadResult", "aria2.removeDownloadResult", [gids.haul], [gids.aria2])
    _ = await compare("removeDownloadResult again", "aria2.removeDownloadResult", [gids.haul], [gids.aria2])
    _ = await compare("purgeDownloadResult", "aria2.purgeDownloadResult", [], [])
    let notifications = await compare("listNotifications", "system.listNotifications", [], [])
    let methods = await compare("listMethods", "system.listMethods", [], [])
    var unauthorized: [JSONValue] = []
    for port in [haul.port, aria2.port] {
      let guesser = try await RPCClient.connect(port: port, secret: "wrong")
      unauthorized.append(await outcome(guesser, "aria2.getVersion", []))
      await guesser.close()
    }
    _ = await aria2.stop()
    let stopped = await haul.stop()
    #expect(differences == [], "\(differences.count) differences from aria2c 1.36")
    #expect(unauthorized.first == unauthorized.last)
    // Every option Haul reports is one of aria2's, every method and notification one of aria2's.
    let aria2Options = Set(options.aria2.object?.keys ?? [])
    #expect(Set(options.haul.object?.keys ?? []).subtracting(aria2Options) == [])
    #expect(Set(global.haul.object?.keys ?? []).subtracting(global.aria2.object?.keys ?? []) == [])
    #expect(
      Set(methods.haul.array?.compactMap(\.string) ?? []).subtracting(
        methods.aria2.array?.compactMap(\.string) ?? []) == [])
    #expect(
      Set(notifications.aria2.array?.compactMap(\.string) ?? []).subtracting(
        notifications.haul.array?.compactMap(\.string) ?? []
      )
      .subtracting(Self.allowedMissing) == [])
    #expect(stopped.status == 0, "\(stopped)")
  }

  /// Bodies at the edge of JSON-RPC, POSTed (and one GET) to both: the same HTTP status and the
  /// same answer. aria2c refuses a request without id (and runs nothing) where JSON-RPC 2.0 would
  /// take a notification, so a client written for aria2 that forgot its id sees the same error.
  @Test func edgeCaseBodiesGetAria2csAnswers() async throws {
    let directory = try TemporaryDirectory()
    let haul = try await DaemonProcess.start(in: directory)
    let aria2 = try await Aria2cProcess.start(in: directory.file("aria2"))
    func bodies(_ secret: String) -> [String] {
      [
        #"{"jsonrpc":"2.0","method":"aria2.addUri","params":["token:\#(secret)",["http://127.0.0.1:9/x"]]}"#,
        "42", "42 ", "[]", "[42]", #"[{"jsonrpc":"2.0","method":"aria2.getGlobalStat"}]"#, "{bad",
      ]
    }
    var differences: [String] = []
    for (mine, theirs) in zip(bodies(DaemonProcess.secret), bodies(Aria2cProcess.secret)) {
      let fromHaul = try await curl(["http://127.0.0.1:\(haul.port)/jsonrpc", "-d", mine])
      let fromAria2 = try await curl(["http://127.0.0.1:\(aria2.port)/jsonrpc", "-d", theirs])
      if fromHaul.status != fromAria2.status || fromHaul.body != fromAria2.body {
        differences.append("\(theirs): \(fromHaul) where aria2c answers \(fromAria2)")
      }
    }
    let getHaul = try await curl(["http://127.0.0.1:\(haul.port)/jsonrpc"])
    let getAria2 = try await curl(["http://127.0.0.1:\(aria2.port)/jsonrpc"])
    if getHaul.status != getAria2.status || getHaul.body != getAria2.body {
      differences.append("GET: \(getHaul) where aria2c answers \(getAria2)")
    }
    let added = try await haul.call("aria2.tellWaiting", [0, 10])
    _ = await aria2.stop()
    let stopped = await haul.stop()
    #expect(differences == [])
    #expect(added == [], "the request without id added nothing")
    #expect(stopped.status == 0, "\(stopped)")
  }

  /// The message with each gid (16 hex digits) written GID, so that two servers' compare.
  static func withoutGIDs(_ message: String) -> String {
    message.replacing(/[0-9a-f]{16}/, with: "GID")
  }

  /// The result, or `{"error": {"code", "message"}}` (gids in messages written GID).
  func outcome(_ client: RPCClient, _ method: String, _ params: [JSONValue]) async -> JSONValue {
    do {
      return try await client.call(method, params)
    } catch {
      if case .rpc(let rpc) = error {
        return ["error": ["code": .integer(rpc.code), "message": .string(Self.withoutGIDs(rpc.message))]]
      }
      return ["transport": .string(error.description)]
    }
  }

  /// Where `haul`'s answer lacks a key aria2's has or gives it another JSON type; for errors,
  /// another code or message. Values are compared only for errors (gids, sizes differ).
  static func differences(_ haul: JSONValue, _ aria2: JSONValue, at path: String) -> [String] {
    switch (haul, aria2) {
    case (.object(let mine), .object(let theirs)):
      if theirs["error"] != nil || mine["error"] != nil {
        return mine == theirs
          ? [] : ["\(path): \(haul.serializedString) where aria2c says \(aria2.serializedString)"]
      }
      return theirs.members.flatMap { key, value -> [String] in
        guard let own = mine[key] else {
          return allowedMissing.contains(key) ? [] : ["\(path).\(key) is missing"]
        }
        return differences(own, value, at: "\(path).\(key)")
      }
    case (.array(let mine), .array(let theirs)):
      guard let first = theirs.first else { return [] }
      guard let own = mine.first else { return ["\(path) is empty where aria2c has \(theirs.count)"] }
      return differences(own, first, at: "\(path)[0]")
    default:
      return haul.typeName == aria2.typeName
        ? [] : ["\(path) is \(haul.typeName) where aria2c has \(aria2.typeName)"]
    }
  }
}

/// `aria2c --enable-rpc` on a free loopback port, with no configuration file or session of its own.
final class Aria2cProcess: Sendable {
  static let secret = "aria2-s3cret"
  let child: ChildProcess
  let port: UInt16
  let client: RPCClient

  private init(child: ChildProcess, port: UInt16, client: RPCClient) {
    self.child = child
    self.port = port
    self.client = client
  }

  /// A test that failed before stopping it leaves no process behind.
  deinit { child.signal(SIGKILL) }

  static func start(in directory: URL) async throws -> Aria2cProcess {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let port = UInt16(try freeLoopbackPort())
    let child = try ChildProcess.start(
      URL(fileURLWithPath: "/usr/bin/aria2c"),
      [
        "--no-conf", "--enable-rpc", "--rpc-listen-port=\(port)", "--rpc-secret=\(secret)",
        "--dir=\(directory.path)",
        "--quiet", "--file-allocation=none", "--max-tries=1", "--auto-save-interval=0",
      ])
    let deadline = ContinuousClock.now + .seconds(30)
    while !TestEnvironment.isListening(port: Int(port)) {
      guard child.isRunning, ContinuousClock.now < deadline else {
        child.signal(SIGKILL)
        throw DaemonProcess.DaemonFailure(
          description: "aria2c did not start listening:\n\(await boundedWait(child))")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    return Aria2cProcess(
      child: child, port: port, client: try await RPCClient.connect(port: port, secret: secret))
  }

  func waitFor(_ gid: JSONValue, status: String) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while try await client.call("aria2.tellStatus", [gid, ["status"]])["status"] != .string(status) {
      guard ContinuousClock.now < deadline else {
        throw DaemonProcess.DaemonFailure(description: "aria2c: \(gid) not \(status)")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  func stop() async -> ProcessOutcome {
    child.signal(SIGTERM)
    let outcome = await boundedWait(child)
    await client.close()
    return outcome
  }
}
