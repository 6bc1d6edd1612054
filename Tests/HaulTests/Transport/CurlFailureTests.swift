import CCurl
import Testing

@testable import Haul
@testable import HaulCore

/// libcurl's result codes as the engine is told them, and the errors users see for them.
@Suite struct CurlFailureTests {
  @Test func aFailedHandshakeIsAConnectionThatCouldNotBeMadeNotACertificateProblem() {
    let detail = "OpenSSL/3.0.22: error:0A00010B:SSL routines::wrong version number"
    let failure = TransportFailure(curlCode: Int32(CCURLE_SSL_CONNECT_ERROR), detail: detail)
    #expect(failure.kind == .connect)
    #expect(failure.message == "TLS handshake failed: \(detail) (is it a TLS server on that port?)")
    let error = DownloadMachine.error(for: failure)
    #expect(error.category == .network, "exit 4, as wget")
    #expect(error.message.contains("TLS handshake failed") && error.message.contains("wrong version number"))
    #expect(error.hint == nil, "no certificate hint, no --insecure: \(error.hint ?? "")")
  }

  /// libcurl's buffer after a handshake with a plain HTTP server ends in a blank: the message
  /// had two before its bracket.
  @Test func aTrailingBlankInLibcurlsWordsIsDropped() {
    let detail = "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:8443 "
    let failure = TransportFailure(curlCode: Int32(CCURLE_SSL_CONNECT_ERROR), detail: detail)
    #expect(
      failure.message
        == "TLS handshake failed: OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:8443 "
        + "(is it a TLS server on that port?)")
    #expect(
      TransportFailure(curlCode: Int32(CCURLE_RECV_ERROR), detail: " \n").message
        == "Failure when receiving data from the peer")
  }

  @Test(arguments: [CCURLE_PEER_FAILED_VERIFICATION, CCURLE_SSL_CACERT_BADFILE, CCURLE_SSL_CERTPROBLEM])
  func certificateFailuresKeepTheirHint(_ code: Int) {
    let failure = TransportFailure(curlCode: Int32(code), detail: "SSL certificate problem")
    #expect(failure.kind == .tls && failure.message == "SSL certificate problem")
    let error = DownloadMachine.error(for: failure)
    #expect(error.category == .tls)
    #expect(
      error.hint == LibraryWording.skipCertificateCheck)
  }

  @Test func kindsOfOtherCodesAndLibcurlsOwnWordsWhenTheBufferIsEmpty() {
    let cases: [(Int, TransportFailure.Kind)] = [
      (CCURLE_COULDNT_RESOLVE_HOST, .resolve), (CCURLE_COULDNT_CONNECT, .connect),
      (CCURLE_RECV_ERROR, .interrupted), (CCURLE_OPERATION_TIMEDOUT, .timedOut),
      (CCURLE_TOO_MANY_REDIRECTS, .tooManyRedirects), (CCURLE_UNSUPPORTED_PROTOCOL, .badURL),
      (CCURLE_WEIRD_SERVER_REPLY, .malformedResponse), (CCURLE_WRITE_ERROR, .aborted),
      (CCURLE_FILESIZE_EXCEEDED, .other),
    ]
    for (code, kind) in cases {
      #expect(TransportFailure(curlCode: Int32(code), detail: "x").kind == kind, "\(code)")
    }
    let plain = TransportFailure(curlCode: Int32(CCURLE_COULDNT_CONNECT), detail: "")
    #expect(plain.message == String(cString: ccurl_easy_strerror(Int32(CCURLE_COULDNT_CONNECT))))
  }
}
