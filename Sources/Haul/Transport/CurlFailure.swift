import CCurl

extension TransportFailure {
  /// How a libcurl result other than CURLE_OK is told to the engine: its kind, and libcurl's
  /// words (`detail`, the error buffer; the code's own text when it is empty).
  init(curlCode code: Int32, detail: String) {
    // OpenSSL's words in libcurl's buffer may end in a blank ("…to 127.0.0.1:8443 "), which
    // doubled the one before a bracket added here.
    let detail = detail.trimmingWhitespace()
    let message = detail.isEmpty ? String(cString: ccurl_easy_strerror(code)) : detail
    let kind: Kind
    switch Int(code) {
    case Int(CCURLE_COULDNT_RESOLVE_HOST), Int(CCURLE_COULDNT_RESOLVE_PROXY): kind = .resolve
    case Int(CCURLE_COULDNT_CONNECT): kind = .connect
    case Int(CCURLE_SSL_CONNECT_ERROR):
      // A failed handshake is not a certificate problem (an http:// server on the port answers
      // "wrong version number"): it is a connection that could not be made, exit 4 as in wget,
      // with no hint that blames the certificate or offers --insecure.
      self.init(
        kind: .connect, message: "TLS handshake failed: \(message) (is it a TLS server on that port?)",
        code: code)
      return
    case Int(CCURLE_PARTIAL_FILE), Int(CCURLE_RECV_ERROR), Int(CCURLE_SEND_ERROR), Int(CCURLE_GOT_NOTHING),
      Int(CCURLE_HTTP2), Int(CCURLE_HTTP2_STREAM):
      kind = .interrupted
    case Int(CCURLE_OPERATION_TIMEDOUT): kind = .timedOut
    case Int(CCURLE_PEER_FAILED_VERIFICATION), Int(CCURLE_SSL_CERTPROBLEM), Int(CCURLE_SSL_CACERT_BADFILE):
      kind = .tls
    case Int(CCURLE_TOO_MANY_REDIRECTS): kind = .tooManyRedirects
    case Int(CCURLE_URL_MALFORMAT), Int(CCURLE_UNSUPPORTED_PROTOCOL): kind = .badURL
    case Int(CCURLE_WEIRD_SERVER_REPLY), Int(CCURLE_BAD_CONTENT_ENCODING): kind = .malformedResponse
    case Int(CCURLE_WRITE_ERROR), Int(CCURLE_ABORTED_BY_CALLBACK): kind = .aborted
    default: kind = .other
    }
    self.init(kind: kind, message: message, code: code)
  }
}
