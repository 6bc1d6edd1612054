import FoundationEssentials
import HaulCore

/// Questions about the server's copy of a file, asked without downloading it.
public enum ServerCopy {
  /// What the server says of its copy against a local file's modification time.
  public enum Comparison: Sendable, Equatable {
    /// Changed after that time; also any answer but the file (a 404, a redirect loop), so
    /// that the download that follows reports its error itself.
    case newer
    /// `304 Not Modified`: not changed since.
    case notNewer
    /// The server sent the file with no modification time (no usable Last-Modified, no
    /// MDTM): which copy is newer cannot be told.
    case unknown
  }

  /// Whether the server's copy at `url` changed after `date` (curl's `-z`, wget's `-N`): one GET
  /// with If-Modified-Since (MDTM for FTP, the file's time for SFTP), stopped as soon as its head
  /// arrives. A server that ignores the condition but tells the time is compared by libcurl.
  ///
  /// ```swift
  /// let modified = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as! Date
  /// switch try await ServerCopy.compare("https://example.com/f.iso", with: modified) {
  /// case .newer: break  // download it
  /// case .notNewer: break  // keep the file
  /// case .unknown: break  // no modification time on the server: decide otherwise
  /// }
  /// ```
  ///
  /// - Throws: `HaulError` when the URL is unusable or the server cannot be reached.
  public static func compare(
    _ url: String, with date: Date, options: DownloadOptions = DownloadOptions()
  ) async throws(HaulError) -> Comparison {
    guard let transport = CurlTransport.shared else {
      throw HaulError(.generic, "libcurl could not be initialised (out of memory?)")
    }
    return try await compare(url, with: date, options: options, transport: transport)
  }

  /// Whether the server's copy at `url` changed after `date`: `compare`, where a copy without
  /// a modification time counts as newer (use `compare` to tell that case apart).
  ///
  /// - Throws: `HaulError` when the URL is unusable or the server cannot be reached.
  public static func isNewer(
    _ url: String, than date: Date, options: DownloadOptions = DownloadOptions()
  ) async throws(HaulError) -> Bool {
    try await compare(url, with: date, options: options) != .notNewer
  }

  static func compare(
    _ url: String, with date: Date, options: DownloadOptions, transport: any Transport
  ) async throws(HaulError) -> Comparison {
    var request = TransferRequest(
      url: try RequestURL.normalize(url), headers: options.headers, userAgent: options.userAgent,
      stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS, tls: options.tls,
      network: options.network)
    request.ifModifiedSince = Int64(date.timeIntervalSince1970.rounded(.down))
    let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
      _ = transport.start(request, sink: HeadSink(continuation))
    }
    switch outcome {
    case .head(let head): return comparison(head)
    case .failed(let failure): throw DownloadMachine.error(for: failure)
    }
  }

  /// What a head says: 304 is not newer; the file (2xx) without a time it can be compared by
  /// cannot be told; anything else counts as newer.
  static func comparison(_ head: ResponseHead) -> Comparison {
    if head.status == 304 { return .notNewer }
    let dated = head.headers["Last-Modified"].flatMap(HTTPDate.parse) != nil
    return (200...299).contains(head.status) && !dated ? .unknown : .newer
  }

  /// Whether the file at `path` is one Haul finished downloading from `url` (its record names
  /// that URL): a rerun of that download never replaces it unless told to, so it may run.
  package static func isFinishedDownload(at path: String, of url: String) -> Bool {
    guard let normalized = try? RequestURL.normalize(url), let record = FinishedFileRecord.read(at: path)
    else {
      return false
    }
    return record.url == RequestURL.withoutPassword(normalized)
  }

  private enum Outcome: Sendable {
    case head(ResponseHead)
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
        if let head { .head(head) } else {
          .failed(failure ?? TransportFailure(kind: .other, message: "no response", code: 0))
        }
      continuation.withLock { $0.take() }?.resume(returning: outcome)
    }
  }
}
