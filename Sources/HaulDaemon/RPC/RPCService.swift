import Haul
import HaulRPC

/// One aria2 method: what runs once the token has been checked and removed. It throws an
/// `RPCError` (aria2's message), or a `HaulError`, whose message becomes aria2's code-1 error.
package struct RPCMethod: Sendable {
  package let name: String
  /// Whether `system.listMethods` names it (not the ones that only say "not supported").
  package let listed: Bool
  package let run: @Sendable (RPCParameters) async throws -> JSONValue

  package init(
    _ name: String, listed: Bool = true, run: @escaping @Sendable (RPCParameters) async throws -> JSONValue
  ) {
    self.name = name
    self.listed = listed
    self.run = run
  }
}

/// Answers JSON-RPC requests the way aria2 does: every method but `system.listMethods` and
/// `system.listNotifications` needs `"token:SECRET"` as its first parameter (compared in
/// constant time); `system.multicall` runs its calls in order, each with its own token; a
/// batch runs its calls in order and answers each (a request without id gets aria2's Invalid
/// Request, and runs nothing). An answer holding an
/// "Unauthorized" error is sent a second later, as aria2 does, to slow down guessing.
///
/// Threads: any; the methods it holds are Sendable.
package final class RPCService: Sendable {
  package static let notificationNames = [
    "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete",
    "aria2.onDownloadError",
  ]
  static let multicall = "system.multicall"
  static let listMethods = "system.listMethods"
  static let listNotifications = "system.listNotifications"

  private let secret: String
  private let methods: [String: RPCMethod]
  private let names: [String]
  private let unauthorizedDelay: Duration

  /// `methods` in the order `system.listMethods` lists them.
  package init(secret: String, methods: [RPCMethod], unauthorizedDelay: Duration = .seconds(1)) {
    self.secret = secret
    self.methods = Dictionary(methods.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    names = methods.filter(\.listed).map(\.name) + [Self.multicall, Self.listMethods, Self.listNotifications]
    self.unauthorizedDelay = unauthorizedDelay
  }

  package func respond(to body: [UInt8]) async -> RPCResponse {
    await respond(to: RPCEnvelope.parse(body))
  }

  package func respond(to envelope: RPCEnvelope) async -> RPCResponse {
    var unauthorized = false
    let response: RPCResponse
    switch envelope {
    case .single(let item):
      response = await reply(to: item, unauthorized: &unauthorized).map(RPCResponse.single) ?? .none
    case .batch(let items):
      var replies: [RPCReply] = []
      for item in items {
        if let reply = await reply(to: item, unauthorized: &unauthorized) { replies.append(reply) }
      }
      response = .batch(replies)
    }
    if unauthorized { try? await Task.sleep(for: unauthorizedDelay) }
    return response
  }

  private func reply(to item: RPCItem, unauthorized: inout Bool) async -> RPCReply? {
    switch item {
    case .invalid(let error, let id):
      return RPCReply(id: id, error: error)
    case .call(let call):
      let (outcome, denied) = await execute(call.method, call.params)
      unauthorized = unauthorized || denied
      guard let id = call.id else { return nil }
      return RPCReply(id: id, outcome: outcome)
    }
  }

  /// Runs one method by name; `denied` when its token was missing or wrong.
  package func execute(_ name: String, _ values: [JSONValue]) async -> (
    Result<JSONValue, RPCError>, denied: Bool
  ) {
    switch name {
    case Self.listMethods: return (.success(.array(names.map(JSONValue.string))), false)
    case Self.listNotifications:
      return (.success(.array(Self.notificationNames.map(JSONValue.string))), false)
    case Self.multicall: return await multicall(RPCParameters(values))
    default: break
    }
    var params = RPCParameters(values)
    guard let token = params.takeToken(), SecretComparison.equal(token, secret) else {
      return (.failure(.unauthorized), true)
    }
    guard let method = methods[name] else { return (.failure(RPCError("No such method: \(name)")), false) }
    do {
      return (.success(try await method.run(params)), false)
    } catch let error as RPCError {
      return (.failure(error), false)
    } catch let error as HaulError {
      return (.failure(RPCError(error.message)), false)
    } catch {
      return (.failure(RPCError("\(error)")), false)
    }
  }

  /// aria2's `system.multicall`: `[[{"methodName": …, "params": […]}, …]]` gives one element per
  /// call, `[result]` or the error object; it needs no token of its own.
  private func multicall(_ params: RPCParameters) async -> (Result<JSONValue, RPCError>, denied: Bool) {
    let specs: [JSONValue]
    do throws(RPCError) {
      specs = try params.requiredArray(at: 0)
    } catch {
      return (.failure(error), false)
    }
    guard specs.count <= RPCEnvelope.maximumBatch else {
      return (.failure(RPCError("system.multicall takes at most \(RPCEnvelope.maximumBatch) calls.")), false)
    }
    var results: [JSONValue] = []
    var denied = false
    for spec in specs {
      guard case .object(let call) = spec else {
        results.append(RPCError("system.multicall expected struct.").json)
        continue
      }
      guard case .string(let name) = call["methodName"] else {
        results.append(RPCError("Missing methodName.").json)
        continue
      }
      guard name != Self.multicall else {
        results.append(RPCError("Recursive system.multicall forbidden.").json)
        continue
      }
      let (outcome, callDenied) = await execute(name, call["params"]?.array ?? [])
      denied = denied || callDenied
      switch outcome {
      case .success(let result): results.append([result])
      case .failure(let error): results.append(error.json)
      }
    }
    return (.success(.array(results)), denied)
  }
}
