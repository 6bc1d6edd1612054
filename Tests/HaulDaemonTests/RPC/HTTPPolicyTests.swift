import FoundationEssentials
import HaulRPC
import Testing

@Suite struct HostPolicyTests {
  private let local = HostPolicy()
  private let all = HostPolicy(listensOnAllAddresses: true, allowedNames: ["NAS.lan."])

  @Test(arguments: [
    "localhost", "localhost:6800", "LOCALHOST.", "ui.localhost:6800", "127.0.0.1", "127.0.0.1:6800",
    "127.1.2.3:80", "[::1]", "[::1]:6800", "[::ffff:127.0.0.1]:6800", " localhost:6800 ",
  ])
  func loopbackNamesAndLiteralsAreAllowed(host: String) {
    #expect(local.verdict(forHostHeader: host) == .allowed)
  }

  @Test(arguments: [
    "evil.example", "evil.example:6800", "localhost.evil.example", "127.0.0.1.nip.io", "192.168.1.5:6800",
    "[2001:db8::1]:6800", "10.0.0.1", "nas.lan",
  ])
  func otherNamesAreRefusedByDefault(host: String) {
    guard case .refused = local.verdict(forHostHeader: host) else {
      Issue.record("\(host) allowed")
      return
    }
  }

  @Test func listeningOnAllAllowsAnyLiteralAndTheNamedHosts() {
    #expect(all.verdict(forHostHeader: "192.168.1.5:6800") == .allowed)
    #expect(all.verdict(forHostHeader: "[2001:db8::1]:6800") == .allowed)
    #expect(all.verdict(forHostHeader: "nas.lan:6800") == .allowed)
    #expect(all.verdict(forHostHeader: "evil.example") == .refused(host: "evil.example"))
  }

  @Test(arguments: [
    "", "   ", "localhost:", "localhost:port", "localhost:123456", "[::1", "[::1]x", "a:b:c", ":80",
  ])
  func malformedHeadersAreRefused(header: String) {
    guard case .refused = local.verdict(forHostHeader: header) else {
      Issue.record("\(header.debugDescription) allowed")
      return
    }
  }

  @Test func aMissingHostIsItsOwnVerdict() {
    #expect(local.verdict(forHostHeader: nil) == .missing)
  }

  @Test func zoneIdsAreNotLiterals() {
    #expect(IPAddress(literal: "fe80::1%eth0") == nil)
    #expect(IPAddress(literal: "::1")?.isLoopback == true)
    #expect(IPAddress(literal: "::2")?.isLoopback == false)
    #expect(IPAddress(literal: "128.0.0.1")?.isLoopback == false)
  }
}

@Suite struct CORSPolicyTests {
  @Test func byDefaultNothingIsGranted() {
    let policy = CORSPolicy()
    #expect(policy.replyHeaders.isEmpty)
    #expect(
      policy.preflightHeaders(
        origin: "https://ui.example", requestMethod: "POST", requestHeaders: "content-type"
      ).isEmpty)
  }

  @Test func allowingAnyOriginGrantsPreflightsAsAria2Does() {
    let policy = CORSPolicy(allowsAnyOrigin: true)
    #expect(policy.replyHeaders.map(\.name) == ["Access-Control-Allow-Origin"])
    let headers = policy.preflightHeaders(
      origin: "https://ui.example", requestMethod: "POST", requestHeaders: "content-type")
    #expect(
      headers.map(\.name) == [
        "Access-Control-Allow-Methods", "Access-Control-Max-Age", "Access-Control-Allow-Headers",
      ])
    #expect(headers.last?.value == "content-type")
    #expect(policy.preflightHeaders(origin: nil, requestMethod: "POST", requestHeaders: nil).isEmpty)
    #expect(
      policy.preflightHeaders(origin: "https://ui.example", requestMethod: nil, requestHeaders: nil).isEmpty)
  }
}

@Suite struct GetRequestTests {
  private func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

  @Test func methodIdAndBase64Params() throws {
    let params = base64(#"["token:s",["http://example.com/a"]]"#).replacingOccurrences(of: "=", with: "%3D")
    let request = try GetRequest.parse(query: "method=aria2.addUri&id=q1&params=\(params)")
    #expect(
      request.envelope
        == .single(
          .call(RPCCall(method: "aria2.addUri", params: ["token:s", ["http://example.com/a"]], id: "q1"))))
    #expect(request.callback == nil)
  }

  @Test func withoutMethodAndIdParamsIsABatch() throws {
    let batch = base64(#"[{"id":1,"method":"system.listMethods"}]"#)
    #expect(
      try GetRequest.parse(query: "params=\(batch)").envelope
        == .batch([.call(RPCCall(method: "system.listMethods", id: 1))]))
  }

  @Test func urlSafeAndUnpaddedBase64AreAccepted() throws {
    // "[\"ab?\"]" has '/' and '+' free forms; build one that needs '-' or '_' in URL-safe base64.
    let json = #"["token:>>>???"]"#
    let urlSafe = base64(json).replacingOccurrences(of: "+", with: "-").replacingOccurrences(
      of: "/", with: "_"
    )
    .replacingOccurrences(of: "=", with: "")
    let request = try GetRequest.parse(query: "method=m&id=1&params=\(urlSafe)")
    #expect(request.envelope == .single(.call(RPCCall(method: "m", params: ["token:>>>???"], id: "1"))))
  }

  @Test func percentEscapesAreDecodedButPlusIsKept() throws {
    let request = try GetRequest.parse(query: "method=aria2%2EgetVersion&id=a+b%zz")
    #expect(request.envelope == .single(.call(RPCCall(method: "aria2.getVersion", id: "a+b%zz"))))
  }

  @Test func badBase64OrJSONIsAParseError() throws {
    #expect(
      try GetRequest.parse(query: "method=m&id=1&params=!!!").envelope
        == .single(.invalid(.parseError, id: .null)))
    #expect(
      try GetRequest.parse(query: "method=m&id=1&params=\(base64("[1,"))").envelope
        == .single(.invalid(.parseError, id: .null)))
  }

  /// aria2c answers a GET with nothing asked (no method, id or params) 400 Invalid Request.
  @Test func nothingAskedIsAnInvalidRequest() throws {
    #expect(try GetRequest.parse(query: nil).envelope == .single(.invalid(.invalidRequest, id: .null)))
    #expect(try GetRequest.parse(query: "x=1").envelope == .single(.invalid(.invalidRequest, id: .null)))
    #expect(
      try GetRequest.parse(query: "method=aria2.getVersion").envelope
        == .single(.invalid(.invalidRequest, id: .null)))
  }

  @Test(arguments: ["cb", "jQuery_123", "$", "a.b.c", "window.handlers.reply"])
  func plainCallbacksAreKept(name: String) throws {
    #expect(try GetRequest.parse(query: "method=m&id=1&jsoncallback=\(name)").callback == name)
  }

  @Test(arguments: [
    "alert(1)", "a;b", "1abc", "a..b", ".a", "a.", "a%20b", "<script>", String(repeating: "a", count: 129),
  ])
  func scriptInCallbacksIsRefused(name: String) {
    #expect(throws: GetRequest.Failure.badCallback) {
      try GetRequest.parse(query: "method=m&id=1&jsoncallback=\(name)")
    }
  }
}
