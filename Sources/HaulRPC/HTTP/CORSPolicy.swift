/// CORS the way aria2 answers it. By default no CORS header is sent at all, so a browser keeps
/// every web page from reading a reply (and from sending JSON with a preflight); with
/// `--rpc-allow-origin-all` every reply allows any origin and preflights are granted, so a web
/// UI on another origin works — with the token, which every call still needs.
package struct CORSPolicy: Sendable, Equatable {
  package var allowsAnyOrigin: Bool

  package init(allowsAnyOrigin: Bool = false) { self.allowsAnyOrigin = allowsAnyOrigin }

  /// Headers for every reply.
  package var replyHeaders: [(name: String, value: String)] {
    allowsAnyOrigin ? [("Access-Control-Allow-Origin", "*")] : []
  }

  /// Headers for the reply to an OPTIONS preflight (beside `replyHeaders`): granted only when
  /// it is one (Origin and Access-Control-Request-Method present) and any origin is allowed;
  /// the requested headers are allowed as asked, as aria2 does.
  package func preflightHeaders(origin: String?, requestMethod: String?, requestHeaders: String?)
    -> [(name: String, value: String)]
  {
    guard allowsAnyOrigin, let origin, !origin.isEmpty, let requestMethod, !requestMethod.isEmpty else {
      return []
    }
    var headers: [(name: String, value: String)] = [
      ("Access-Control-Allow-Methods", "POST, GET, OPTIONS"),
      ("Access-Control-Max-Age", "1728000"),
    ]
    if let requestHeaders, !requestHeaders.isEmpty {
      headers.append(("Access-Control-Allow-Headers", requestHeaders))
    }
    return headers
  }
}
