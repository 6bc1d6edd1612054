import HaulDaemon
import HaulRPC
import Testing

@Suite struct RPCServiceTests {
  private let service = RPCService(
    secret: "s3cret",
    methods: [
      RPCMethod("test.echo") { params in .array(params.values) },
      RPCMethod("test.fail") { _ in throw RPCError("GID 2089b05ecca3d829 is not found") },
    ], unauthorizedDelay: .zero)

  private func call(_ text: String) async -> JSONValue? { await service.respond(to: Array(text.utf8)).json }

  @Test func theTokenIsRemovedBeforeTheMethodRuns() async {
    #expect(
      await call(#"{"id":1,"method":"test.echo","params":["token:s3cret","a",2]}"#)?["result"] == ["a", 2])
  }

  @Test func withoutTheRightTokenNothingRuns() async {
    for params in [#"[]"#, #"["a"]"#, #"["token:S3cret"]"#, #"["token:s3cret2"]"#, #"[["token:s3cret"]]"#] {
      #expect(
        await call(#"{"id":1,"method":"test.echo","params":\#(params)}"#)?["error"]
          == ["code": 1, "message": "Unauthorized"], "\(params)")
    }
  }

  @Test func unknownMethodsNeedTheTokenFirst() async {
    #expect(await call(#"{"id":1,"method":"nope"}"#)?["error"]?["message"] == "Unauthorized")
    #expect(
      await call(#"{"id":1,"method":"nope","params":["token:s3cret"]}"#)?["error"]?["message"]
        == "No such method: nope")
  }

  @Test func methodFailuresAreCode1WithTheirMessage() async {
    #expect(
      await call(#"{"id":"x","method":"test.fail","params":["token:s3cret"]}"#)
        == [
          "id": "x", "jsonrpc": "2.0", "error": ["code": 1, "message": "GID 2089b05ecca3d829 is not found"],
        ])
  }

  // JSON-RPC wants the id back as sent: as a double, 12345678901234567890 came back as
  // 1.2345678901234567e+19.
  @Test(arguments: ["12345678901234567890", "-9223372036854775809", "9223372036854775807", "7", #""7""#])
  func idsComeBackExactly(id: String) async {
    let reply = await service.respond(
      to: Array(#"{"id":\#(id),"method":"test.echo","params":["token:s3cret"]}"#.utf8))
    #expect(String(decoding: reply.body(), as: UTF8.self) == #"{"id":\#(id),"jsonrpc":"2.0","result":[]}"#)
  }

  @Test func listingNeedsNoToken() async {
    let methods = await call(#"{"id":1,"method":"system.listMethods"}"#)?["result"]?.array
    #expect(
      methods == [
        "test.echo", "test.fail", "system.multicall", "system.listMethods", "system.listNotifications",
      ])
    #expect(
      await call(#"{"id":1,"method":"system.listNotifications"}"#)?["result"]?.array?.first
        == "aria2.onDownloadStart")
  }

  @Test func multicallRunsEachWithItsOwnToken() async {
    let reply = await call(
      #"""
      {"id":1,"method":"system.multicall","params":[[
        {"methodName":"test.echo","params":["token:s3cret","a"]},
        {"methodName":"test.echo","params":["b"]},
        {"methodName":"system.multicall","params":[]},
        {"params":[]},
        5,
        {"methodName":"test.fail","params":["token:s3cret"]}
      ]]}
      """#)
    #expect(
      reply?["result"]
        == [
          [["a"]], ["code": 1, "message": "Unauthorized"],
          ["code": 1, "message": "Recursive system.multicall forbidden."],
          ["code": 1, "message": "Missing methodName."],
          ["code": 1, "message": "system.multicall expected struct."],
          ["code": 1, "message": "GID 2089b05ecca3d829 is not found"],
        ])
  }

  @Test func multicallWantsAnArray() async {
    #expect(
      await call(#"{"id":1,"method":"system.multicall","params":["x"]}"#)?["error"]?["message"]
        == "The parameter at 0 has wrong type.")
  }

  @Test func unauthorizedAnswersAreDelayed() async {
    let slow = RPCService(secret: "s", methods: [], unauthorizedDelay: .milliseconds(200))
    let clock = ContinuousClock()
    let start = clock.now
    _ = await slow.respond(
      to: Array(#"{"id":1,"method":"system.multicall","params":[[{"methodName":"aria2.x"}]]}"#.utf8))
    #expect(clock.now - start >= .milliseconds(200))
    let quick = clock.now
    _ = await slow.respond(to: Array(#"{"id":1,"method":"system.listMethods"}"#.utf8))
    #expect(clock.now - quick < .milliseconds(200))
  }

  /// As aria2c: a request without id is refused (and not run), alone or in a batch.
  @Test func requestsWithoutIdAreRefusedAndNotRun() async {
    let runs = Counter()
    let counting = RPCService(
      secret: "s3cret",
      methods: [
        RPCMethod("test.count") { _ in
          await runs.increment()
          return "OK"
        }
      ], unauthorizedDelay: .zero)
    let invalid: JSONValue = [
      "id": .null, "jsonrpc": "2.0", "error": ["code": -32600, "message": "Invalid Request."],
    ]
    let single = await counting.respond(to: Array(#"{"method":"test.count","params":["token:s3cret"]}"#.utf8))
    #expect(single.json == invalid)
    #expect(single.httpStatus == 400)
    let batch = await counting.respond(
      to: Array(
        #"[{"method":"test.count","params":["token:s3cret"]},{"id":2,"method":"test.count","params":["token:s3cret"]}]"#
          .utf8))
    #expect(batch.json == [invalid, ["id": 2, "jsonrpc": "2.0", "result": "OK"]])
    #expect(await runs.value == 1, "only the call with an id ran")
  }

  private actor Counter {
    var value = 0
    func increment() { value += 1 }
  }
}
