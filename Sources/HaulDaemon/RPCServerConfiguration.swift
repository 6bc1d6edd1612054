import HaulRPC

/// How the RPC server listens and what it lets through.
package struct RPCServerConfiguration: Sendable {
  /// 6800 as aria2; 0 picks a free port (tests).
  package var port: UInt16 = 6800
  /// Listen on every address instead of 127.0.0.1 and ::1 (`--rpc-listen-all`).
  package var listenOnAllAddresses = false
  /// Host names besides localhost and IP literals that requests may name (`--rpc-allow-host`).
  package var allowedHosts: Set<String> = []
  /// Answer CORS for any origin (`--rpc-allow-origin-all`).
  package var allowAnyOrigin = false
  /// The largest request body and WebSocket message (aria2's `--rpc-max-request-size`, 2M).
  package var maximumRequestSize = 2 << 20
  /// The largest request line plus headers.
  package var maximumHeaderSize = 16 << 10
  /// Connections open at once; past it the oldest idle HTTP connections are closed.
  package var maximumConnections = 1024
  /// Seconds a connection may take to deliver a request, or stay idle between requests (aria2: 30).
  package var requestTimeout: Double = 30
  /// Seconds between pings on an idle WebSocket; one that answers nothing in two is closed.
  package var webSocketPingInterval: Double = 30
  /// Bytes waiting to be sent to one WebSocket client before it is closed as too slow.
  package var maximumWebSocketBacklog = 16 << 20
  /// WebSocket messages of one client being answered at once before its reading pauses.
  package var maximumWebSocketInFlight = 16

  package init() {}

  var hostPolicy: HostPolicy {
    HostPolicy(listensOnAllAddresses: listenOnAllAddresses, allowedNames: allowedHosts)
  }
  var corsPolicy: CORSPolicy { CORSPolicy(allowsAnyOrigin: allowAnyOrigin) }
}
