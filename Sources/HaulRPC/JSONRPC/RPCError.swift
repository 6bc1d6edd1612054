/// A JSON-RPC error as aria2 sends it: `{"code": …, "message": "…"}`.
///
/// aria2 reports every failure of a method with code 1 and a sentence (`GID … is not found`);
/// the negative codes are JSON-RPC's own, with aria2's exact messages.
package struct RPCError: Error, Equatable, Sendable {
  package let code: Int64
  package let message: String

  package init(code: Int64, message: String) {
    self.code = code
    self.message = message
  }

  /// A method failed: aria2's code 1 with its message.
  package init(_ message: String) { self.init(code: 1, message: message) }

  package static let parseError = RPCError(code: -32700, message: "Parse error.")
  package static let invalidRequest = RPCError(code: -32600, message: "Invalid Request.")
  package static let invalidParams = RPCError(code: -32602, message: "Invalid params.")
  package static let internalError = RPCError(code: -32603, message: "Internal error.")
  /// A missing or wrong `token:` parameter.
  package static let unauthorized = RPCError("Unauthorized")

  package var json: JSONValue { ["code": .integer(code), "message": .string(message)] }
}
