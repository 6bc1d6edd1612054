import Foundation
import Haul
import HaulDaemon
import HaulRPC
import HaulTestSupport
import Testing

/// A daemon on a fresh catalog in a temporary directory, on a free port, with a test server to
/// download from.
final class DaemonFixture: Sendable {
  let directory: TemporaryDirectory
  let server: TestServer
  let daemon: Daemon
  var port: UInt16 { daemon.server.port }
  var downloads: URL { directory.file("downloads") }
  static let secret = "s3cret"

  init(configure: @Sendable (inout Daemon.Configuration) -> Void = { _ in }) async throws {
    directory = try TemporaryDirectory()
    server = try TestServer()
    try FileManager.default.createDirectory(
      at: directory.file("downloads"), withIntermediateDirectories: false)
    var configuration = Daemon.Configuration(
      catalog: directory.file("catalog.sqlite"), directory: directory.file("downloads").path,
      secret: .given(Self.secret))
    configuration.server.port = 0
    configure(&configuration)
    daemon = try await Daemon.start(configuration)
  }

  deinit { server.stop() }

  func stop() async { await daemon.stop(grace: 1) }

  /// Serves `size` seeded bytes at `path`; `stallAfter` keeps the first response hanging there.
  @discardableResult
  func serve(_ path: String, size: Int, seed: UInt64, stallAfter: Int? = nil, bytesPerSecond: Int? = nil)
    -> [UInt8]
  {
    let body = TestResource.random(size: size, seed: seed)
    let faults = TestFaults(stallAfterBytes: stallAfter, stallTimes: 1, bytesPerSecond: bytesPerSecond)
    server.setResource(path, TestResource(body: body, etag: "\"\(seed)\"", faults: faults))
    return body
  }

  /// One call over HTTP with the token; the result, or the error the daemon answered.
  func call(_ method: String, _ params: [JSONValue] = []) async throws -> JSONValue {
    let body = JSONValue.object(
      [
        "jsonrpc": "2.0", "id": "t", "method": .string(method),
        "params": .array([.string("token:\(Self.secret)")] + params),
      ])
    let response = try await post(port: port, body.serializedString)
    guard let json = response.json else { throw RPCError("not JSON: \(response.text)") }
    if let error = json["error"] {
      throw RPCError(code: error["code"]?.integer ?? 0, message: error["message"]?.string ?? "")
    }
    return json["result"] ?? .null
  }

  /// Polls tellStatus until `status` (at most `seconds`, a bound against hangs).
  func waitFor(_ gid: String, status: String, seconds: Double = 60) async throws -> JSONValue {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var last: JSONValue = .null
    while ContinuousClock.now < deadline {
      last = try await call("aria2.tellStatus", [.string(gid)])
      if last["status"] == .string(status) { return last }
      try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("\(gid) never became \(status): \(last.serializedString)")
    return last
  }

  func contents(_ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: downloads.appendingPathComponent(name).path).map { Array($0) }
  }
}
