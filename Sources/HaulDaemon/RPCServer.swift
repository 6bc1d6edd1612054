import Haul
import HaulRPC

/// aria2's JSON-RPC over HTTP and WebSocket on `/jsonrpc`, served by libevent's evhttp on a
/// thread of its own, answering with an `RPCService`.
///
///     let server = try await RPCServer.start(configuration, service: service)
///     print("listening on port \(server.port)")
///     server.notify("aria2.onDownloadStart", gid: "2089b05ecca3d829")
///     await server.stop()
///
/// Threads: any.
package final class RPCServer: Sendable {
  private let loop: EventLoop<RPCHTTPServer>
  /// The port listened on (the one asked for, or the free one picked for port 0).
  package let port: UInt16
  /// The addresses listened on.
  package let addresses: [String]
  /// Addresses the system lacks (no IPv6): the daemon listens without them.
  package let unavailableAddresses: [String]

  private init(loop: EventLoop<RPCHTTPServer>, sockets: ListeningSockets) {
    self.loop = loop
    port = sockets.port
    addresses = sockets.sockets.map(\.address)
    unavailableAddresses = sockets.unavailable
  }

  package static func start(_ configuration: RPCServerConfiguration, service: RPCService)
    async throws(HaulError)
    -> RPCServer
  {
    let loop = try await EventLoop<RPCHTTPServer>.start { handle, loop throws(HaulError) in
      try RPCHTTPServer(handle: handle, loop: loop, service: service, configuration: configuration)
    }
    guard let sockets = await loop.perform({ $0.sockets }) else {
      throw HaulError(.generic, "the RPC server stopped while starting")
    }
    return RPCServer(loop: loop, sockets: sockets)
  }

  /// Sends aria2's notification `method` (`aria2.onDownloadStart` …) for `gid` to every
  /// WebSocket client: `{"jsonrpc":"2.0","method":…,"params":[{"gid":…}]}`.
  package func notify(_ method: String, gid: String) {
    let text = JSONValue.object([
      "jsonrpc": "2.0", "method": .string(method), "params": [["gid": .string(gid)]],
    ])
    .serialized
    loop.execute { $0.broadcast(text) }
  }

  /// Stops accepting, closes WebSocket sessions (1001), lets requests being answered finish for
  /// up to `grace` seconds, and returns once the loop thread has ended.
  package func stop(grace: Double = 3) async {
    loop.execute { $0.shutdown(grace: grace) }
    await loop.waitUntilStopped()
  }

  /// Counts the loop thread sees (for tests and the log).
  package struct Counters: Sendable, Equatable {
    package let connections: Int
    package let webSockets: Int
    package let evicted: Int
  }

  package func counters() async -> Counters? {
    await loop.perform { server in
      Counters(
        connections: server.table.count, webSockets: server.sessions.count, evicted: server.table.evicted)
    }
  }
}
