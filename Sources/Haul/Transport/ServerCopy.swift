import FoundationEssentials
import HaulCore

/// Questions about the server's copy of a file, asked without downloading it.
public enum ServerCopy {
  /// Whether the server's copy at `url` changed after `date` (curl's `-z`, wget's `-N`): one GET
  /// with If-Modified-Since (MDTM for FTP, the file's time for SFTP), stopped as soon as its head arrives. A server that
  /// answers anything but `304 Not Modified` counts as newer, so the download that follows
  /// reports its errors (a 404) itself.
  ///
  /// ```swift
  /// let modified = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as! Date
  /// if try await ServerCopy.isNewer("https://example.com/f.iso", than: modified) { /* download */ }
  /// ```
  ///
  /// - Throws: `HaulError` when the URL is unusable or the server cannot be reached.
  public static func isNewer(
    _ url: String, than date: Date, options: DownloadOptions = DownloadOptions()
  ) async throws(HaulError) -> Bool {
    guard let transport = CurlTransport.shared else {
      throw HaulError(.generic, "libcurl could not be initialised (out of memory?)")
    }
    return try await isNewer(url, than: date, options: options, transport: transport)
  }

  static func isNewer(
    _ url: String, than date: Date, options: DownloadOptions, transport: any Transport
  ) async throws(HaulError) -> Bool {
    var request = TransferRequest(
      url: try RequestURL.normalize(url), headers: options.headers, userAgent: options.userAgent,
      stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS, tls: options.tls,
      network: options.network)
    request.ifModifiedSince = Int64(date.timeIntervalSince1970.rounded(.down))
    let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
      _ = transport.start(request, sink: HeadSink(continuation))
    }
    switch outcome {
    case .status(let status): return status != 304
    case .failed(let failure): throw DownloadMachine.error(for: failure)
    }
  }

  private enum Outcome: Sendable {
    case status(Int)
    case failed(TransportFailure)
  }

  /// Takes the head and stops the transfer; resumes the waiting caller once, at the finish.
  private final class HeadSink: TransferSink {
    private let continuation: Locked<CheckedContinuation<Outcome, Never>?>

    init(_ continuation: CheckedContinuation<Outcome, Never>) { self.continuation = Locked(continuation) }

    func transferDidReceiveHead(_ head: ResponseHead) -> BodyDisposition { .abort }
    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> ReceiveResult { .abort }
    func transferDidFinish(head: ResponseHead?, failure: TransportFailure?) {
      let outcome: Outcome =
        if let head { .status(head.status) } else {
          .failed(failure ?? TransportFailure(kind: .other, message: "no response", code: 0))
        }
      continuation.withLock { $0.take() }?.resume(returning: outcome)
    }
  }
}
