import HaulRPC
import Testing

@Suite struct RPCEnvelopeTests {
  private func parse(_ text: String) -> RPCEnvelope { RPCEnvelope.parse(Array(text.utf8)) }

  @Test func readsACall() {
    #expect(
      parse(#"{"jsonrpc":"2.0","id":"qwer","method":"aria2.addUri","params":["token:s",["http://x/"]]}"#)
        == .single(.call(RPCCall(method: "aria2.addUri", params: ["token:s", ["http://x/"]], id: "qwer"))))
  }

  @Test func anIdCanBeAStringANumberOrNull() {
    #expect(parse(#"{"id":7,"method":"m"}"#) == .single(.call(RPCCall(method: "m", id: 7))))
    #expect(parse(#"{"id":null,"method":"m"}"#) == .single(.call(RPCCall(method: "m", id: .null))))
    #expect(parse(#"{"id":[1],"method":"m"}"#) == .single(.invalid(.invalidRequest, id: .null)))
    #expect(parse(#"{"id":{},"method":"m"}"#) == .single(.invalid(.invalidRequest, id: .null)))
  }

  /// aria2c answers a request without id (a JSON-RPC notification) 400 Invalid Request and runs
  /// nothing; clients written for it rely on that.
  @Test func withoutAnIdItIsAnInvalidRequestAsAria2Answers() {
    #expect(
      parse(#"{"jsonrpc":"2.0","method":"aria2.pauseAll"}"#) == .single(.invalid(.invalidRequest, id: .null)))
    #expect(parse(#"[{"method":"aria2.pauseAll"}]"#) == .batch([.invalid(.invalidRequest, id: .null)]))
  }

  @Test func malformedJSONIsAParseError() {
    #expect(parse(#"{"method": "aria2.getVersion""#) == .single(.invalid(.parseError, id: .null)))
    #expect(parse("") == .single(.invalid(.parseError, id: .null)))
  }

  /// aria2c's streaming parser: a number that ends the body is a Parse error (500); one followed
  /// by a byte, like any other value that is not an object, an Invalid Request.
  @Test func aNumberThatEndsTheBodyIsAParseErrorAsAria2Answers() {
    for body in ["42", "-1", "1.5"] { #expect(parse(body) == .single(.invalid(.parseError, id: .null))) }
    for body in ["42 ", "42\n"] { #expect(parse(body) == .single(.invalid(.invalidRequest, id: .null))) }
  }

  @Test func wrongShapesAreInvalidRequests() {
    #expect(parse("1 ") == .single(.invalid(.invalidRequest, id: .null)))
    #expect(parse("null") == .single(.invalid(.invalidRequest, id: .null)))
    #expect(parse(#""aria2.getVersion""#) == .single(.invalid(.invalidRequest, id: .null)))
    #expect(parse(#"{"id":1}"#) == .single(.invalid(.invalidRequest, id: 1)))
    #expect(parse(#"{"id":1,"method":5}"#) == .single(.invalid(.invalidRequest, id: 1)))
    #expect(parse(#"{"id":1,"jsonrpc":"1.0","method":"m"}"#) == .single(.invalid(.invalidRequest, id: 1)))
  }

  @Test func namedOrScalarParamsAreInvalidParams() {
    #expect(parse(#"{"id":1,"method":"m","params":{"a":1}}"#) == .single(.invalid(.invalidParams, id: 1)))
    #expect(parse(#"{"id":1,"method":"m","params":"x"}"#) == .single(.invalid(.invalidParams, id: 1)))
  }

  /// Objects in order; elements that are not objects are skipped, as aria2c skips them.
  @Test func batchesKeepEveryObjectInOrder() {
    #expect(
      parse(#"[{"id":1,"method":"a"},2,{"method":"b"},{"id":"x"},[]]"#)
        == .batch([
          .call(RPCCall(method: "a", id: 1)), .invalid(.invalidRequest, id: .null),
          .invalid(.invalidRequest, id: "x"),
        ]))
  }

  /// aria2c answers `[]` (and `[42]`) with 200 and `[]`.
  @Test func anEmptyBatchIsAnsweredEmpty() {
    #expect(parse("[]") == .batch([]))
    #expect(parse("[42]") == .batch([]))
    #expect(RPCResponse.batch([]).httpStatus == 200)
    #expect(RPCResponse.batch([]).body() == Array("[]".utf8))
  }

  @Test func oversizedBatchesAreOneInvalidRequest() {
    let many =
      "["
      + Array(repeating: #"{"id":1,"method":"m"}"#, count: RPCEnvelope.maximumBatch + 1).joined(
        separator: ",") + "]"
    #expect(parse(many) == .single(.invalid(.invalidRequest, id: .null)))
  }
}

@Suite struct RPCReplyTests {
  @Test func successHasAria2sMemberOrder() {
    let reply = RPCReply(id: "qwer", result: "2089b05ecca3d829")
    #expect(reply.json.serializedString == #"{"id":"qwer","jsonrpc":"2.0","result":"2089b05ecca3d829"}"#)
  }

  @Test func errorHasCodeAndMessage() {
    let reply = RPCReply(id: .null, error: .unauthorized)
    #expect(
      reply.json.serializedString
        == #"{"id":null,"jsonrpc":"2.0","error":{"code":1,"message":"Unauthorized"}}"#)
  }

  @Test func statusFollowsAria2() {
    #expect(RPCResponse.single(RPCReply(id: 1, result: "OK")).httpStatus == 200)
    #expect(RPCResponse.single(RPCReply(id: 1, error: .unauthorized)).httpStatus == 400)
    #expect(RPCResponse.single(RPCReply(id: 1, error: .invalidRequest)).httpStatus == 400)
    #expect(
      RPCResponse.single(RPCReply(id: 1, error: RPCError(code: -32601, message: "x"))).httpStatus == 404)
    #expect(RPCResponse.single(RPCReply(id: .null, error: .parseError)).httpStatus == 500)
    #expect(RPCResponse.batch([RPCReply(id: 1, error: .unauthorized)]).httpStatus == 200)
    #expect(RPCResponse.none.httpStatus == 204)
  }

  @Test func jsonpWrapsTheBody() {
    let body = RPCResponse.single(RPCReply(id: "1", result: "OK")).body(jsonpCallback: "cb")
    #expect(String(decoding: body, as: UTF8.self) == #"cb({"id":"1","jsonrpc":"2.0","result":"OK"})"#)
  }

  @Test func unauthorizedIsSeenInBatches() {
    #expect(
      RPCResponse.batch([RPCReply(id: 1, result: "OK"), RPCReply(id: 2, error: .unauthorized)]).isUnauthorized
    )
    #expect(!RPCResponse.batch([RPCReply(id: 1, result: "OK")]).isUnauthorized)
  }
}

@Suite struct RPCParametersTests {
  @Test func takesTheTokenOnlyFromAFirstTokenString() {
    var params = RPCParameters(["token:abc", "x"])
    #expect(params.takeToken() == "abc")
    #expect(params.values == ["x"])
    var none = RPCParameters(["abc", "token:x"])
    #expect(none.takeToken() == nil)
    #expect(none.count == 2)
    var empty = RPCParameters(["token:"])
    #expect(empty.takeToken() == "")
  }

  @Test func readsTypesWithAria2sMessages() throws {
    let params = RPCParameters(["gid", 5, ["a", 1, "b"], ["k": "v"]])
    #expect(try params.requiredString(at: 0) == "gid")
    #expect(try params.requiredInteger(at: 1, atLeast: 0) == 5)
    #expect(try params.strings(at: 2) == ["a", "b"])
    #expect(try params.object(at: 3) == ["k": "v"])
    #expect(try params.string(at: 9) == nil)
    #expect(throws: RPCError("The parameter at 0 has wrong type.")) { try params.integer(at: 0) }
    #expect(throws: RPCError("The parameter at 4 is required but missing.")) {
      try params.requiredString(at: 4)
    }
    #expect(
      throws: RPCError(
        "The integer parameter at 1 has invalid value: the value must be greater than or equal to 6.")
    ) { try params.requiredInteger(at: 1, atLeast: 6) }
  }

  @Test func secretsCompareByContent() {
    #expect(SecretComparison.equal("s3cret", "s3cret"))
    #expect(!SecretComparison.equal("s3cret", "s3creT"))
    #expect(!SecretComparison.equal("s3cre", "s3cret"))
    #expect(!SecretComparison.equal("", "x"))
    #expect(SecretComparison.equal("", ""))
    // 256 apart in length must not wrap around to "equal".
    #expect(!SecretComparison.equal(String(repeating: "a", count: 256), ""))
  }
}
