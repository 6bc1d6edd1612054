// JSON-RPC request decoding (the daemon's HTTP bodies and WebSocket messages): never traps and
// never stalls; a text that decodes serializes to JSON that decodes to the same value; every
// request item is a call with a valid id or the error that replaces it; replies serialize to
// JSON (an empty batch's: `[]`). The same bytes as aria2's GET query and as a Host header must
// not trap either.

import HaulRPC

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJsonrpcRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = fuzzBytes(data, size)
  if let value = try? JSONValue.parse(bytes) {
    let again = try? JSONValue.parse(value.serialized)
    require(again == value, "round trip of \(value) gave \(String(describing: again))")
  }
  let envelope = RPCEnvelope.parse(bytes)
  var replies: [RPCReply] = []
  let items: [RPCItem]
  switch envelope {
  case .single(let item): items = [item]
  case .batch(let batch):
    // An empty batch is answered `[]`, as aria2c answers it.
    require(batch.count <= RPCEnvelope.maximumBatch, "batch of \(batch.count)")
    items = batch
  }
  for item in items {
    switch item {
    case .call(let call):
      switch call.id {
      case nil, .string, .integer, .number, .double, .null: break
      default: require(false, "call with id \(String(describing: call.id))")
      }
      replies.append(RPCReply(id: call.id ?? .null, result: .array(call.params)))
    case .invalid(let error, let id):
      require(error.code < 0, "invalid item with code \(error.code)")
      replies.append(RPCReply(id: id, error: error))
    }
  }
  let response: RPCResponse = replies.count == 1 ? .single(replies[0]) : .batch(replies)
  require((try? JSONValue.parse(response.body())) != nil, "reply is not JSON")

  let text = fuzzString(bytes)
  if let get = try? GetRequest.parse(query: text), let callback = get.callback {
    require(
      callback.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_$.".contains($0)) },
      "callback \(callback)")
  }
  _ = HostPolicy().verdict(forHostHeader: text)
  return 0
}
