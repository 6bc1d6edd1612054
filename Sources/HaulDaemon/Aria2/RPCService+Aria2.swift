import Haul
import HaulRPC

extension RPCService {
  /// aria2's JSON-RPC on `manager`, without HTTP: what `haul daemon` serves over HTTP and
  /// WebSocket, and what any other channel (a Unix socket, a test) can answer with.
  ///
  ///     let service = RPCService.aria2(manager: manager, secret: secret, directory: downloads.path)
  ///     let reply = await service.reply(to: Array(#"{"id":1,"method":"aria2.getGlobalStat","params":["token:…"]}"#.utf8))
  ///
  /// - Parameters:
  ///   - secret: the token every call but `system.listMethods`/`listNotifications` must carry.
  ///   - directory: where downloads go unless a call's `dir` says otherwise (aria2's `--dir`).
  ///   - server: what `getGlobalOption` reports about the HTTP server (nil without one).
  ///   - unauthorizedDelay: how long an answer holding "Unauthorized" waits (aria2: 1 s).
  ///   - shutdown: what `aria2.shutdown` (false) and `aria2.forceShutdown` (true) do, called
  ///     before their "OK" is sent; by default nothing.
  package static func aria2(
    manager: DownloadManager, secret: String, directory: String, server: Aria2Methods.ServerFacts? = nil,
    unauthorizedDelay: Duration = .seconds(1),
    shutdown: @escaping @Sendable (_ force: Bool) -> Void = { _ in }
  ) -> RPCService {
    let methods = Aria2Methods(manager: manager, directory: directory, facts: server, shutdown: shutdown)
    return RPCService(secret: secret, methods: methods.methods, unauthorizedDelay: unauthorizedDelay)
  }

  /// One request body (a call, or a batch as a JSON array) to its reply body, serialized as
  /// aria2 does; nil when there is nothing to answer. Malformed input (a request without id
  /// too, as aria2 reads it) gets its JSON-RPC error, never a throw.
  package func reply(to request: [UInt8]) async -> [UInt8]? {
    let response = await respond(to: request)
    return response == .none ? nil : response.body()
  }
}
