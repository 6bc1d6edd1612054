import Dispatch
import FoundationEssentials

/// One resumable download of one URL to one file.
///
/// ```swift
/// let download = try Download(
///   url: "https://example.com/big.iso", to: .directory(URL(fileURLWithPath: ".")))
/// Task {
///   for await event in download.events {
///     if case .progress(let p) = event { print(p.fraction ?? 0) }
///   }
/// }
/// let result = try await download.run()   // resumes from NAME.part if an earlier run stopped
/// print("saved \(result.file.path)")
/// ```
///
/// `pause()`, `resume()` and `cancel()` may be called from any thread while `run()` is running.
/// Bytes live in `NAME.part` with their state in `NAME.haul` until the file is complete; then
/// the file is renamed to `NAME` atomically. Nothing incomplete ever sits at `NAME`.
public final class Download: Sendable {
  public let url: String
  public let destination: DownloadDestination
  public let options: DownloadOptions

  /// Everything that happens, in order; ends after `.completed` or `.failed`.
  /// One consumer; if it falls far behind, the oldest events are dropped.
  public let events: AsyncStream<DownloadEvent>

  private let continuation: AsyncStream<DownloadEvent>.Continuation
  private let control = DownloadControl()
  private let transport: any Transport
  /// Segments are not split below this; tests lower it to split small files.
  let minimumSplit: Int64

  /// - Throws: `HaulError` with category `.invalidInput` when the URL or options are unusable.
  public convenience init(
    url: String, to destination: DownloadDestination, options: DownloadOptions = DownloadOptions()
  ) throws(HaulError) {
    guard let transport = CurlTransport.shared else {
      throw HaulError(.generic, "libcurl could not be initialised (out of memory?)")
    }
    try self.init(url: url, to: destination, options: options, transport: transport)
  }

  init(
    url: String, to destination: DownloadDestination, options: DownloadOptions, transport: any Transport,
    minimumSplit: Int64 = 1 << 20
  ) throws(HaulError) {
    self.minimumSplit = minimumSplit
    self.url = try RequestURL.normalize(url)
    self.destination = destination
    self.options = options
    self.transport = transport
    try Self.validate(options)
    (events, continuation) = AsyncStream.makeStream(
      of: DownloadEvent.self, bufferingPolicy: .bufferingNewest(4096))
  }

  private static func validate(_ options: DownloadOptions) throws(HaulError) {
    if let connections = options.connections, !(1...64).contains(connections) {
      throw HaulError(.invalidInput, "connections must be between 1 and 64 (asked for \(connections))")
    }
    if let rate = options.rateLimit, rate <= 0 {
      throw HaulError(.invalidInput, "the rate limit must be positive")
    }
    guard options.stallTimeout > 0, options.stallTimeout.isFinite else {
      throw HaulError(.invalidInput, "the timeout must be a positive number of seconds")
    }
    for (name, value) in options.headers {
      guard HeaderField.isValidName(name), HeaderField.isValidValue(value) else {
        throw HaulError(.invalidInput, "invalid header '\(name): \(value)'")
      }
      if ["range", "if-range"].contains(name.lowercased()) {
        throw HaulError(.invalidInput, "the \(name) header is managed by haul for resuming and cannot be set")
      }
    }
  }

  /// Runs the download to the end: completed, failed, or cancelled.
  /// Cancelling the calling task works like `cancel()`.
  ///
  /// - Returns: the finished file, or the file that was already complete.
  /// - Throws: `HaulError`; category `.interrupted` after `cancel()`.
  @discardableResult
  public func run() async throws(HaulError) -> DownloadResult {
    let run = DownloadRun(
      url: url, destination: destination, options: options, transport: transport, control: control,
      emit: { [continuation] in continuation.yield($0) }, minimumSplit: minimumSplit)
    let control = self.control
    let keep = options.keepPartialOnCancel
    let outcome: Result<DownloadResult, HaulError> = await withTaskCancellationHandler {
      do throws(HaulError) { return .success(try await run.execute()) } catch { return .failure(error) }
    } onCancel: {
      control.cancel(keepPartial: keep)
    }
    switch outcome {
    case .success(let result):
      continuation.finish()
      return result
    case .failure(let error):
      continuation.yield(.failed(error))
      continuation.finish()
      throw error
    }
  }

  /// Stops transferring and makes everything received durable; `run()` keeps waiting for `resume()`.
  public func pause() { control.pause() }

  /// Continues after `pause()`.
  public func resume() { control.resume() }

  /// Stops the download; `run()` throws `.interrupted`. Keeps the partial bytes for a later
  /// resume unless `keepPartial` is false (default: `DownloadOptions.keepPartialOnCancel`).
  public func cancel(keepPartial: Bool? = nil) {
    control.cancel(keepPartial: keepPartial ?? options.keepPartialOnCancel)
  }
}

/// What an interrupted download holds, read from disk without the network,
/// e.g. to show progress at app launch.
public struct SavedProgress: Sendable, Equatable {
  /// The file the download will produce.
  public let file: URL
  /// The URL being downloaded.
  public let url: String
  /// Bytes held and durable.
  public let bytes: Int64
  /// The full size, when known.
  public let totalBytes: Int64?

  /// 0...1 when the size is known.
  public var fraction: Double? {
    guard let totalBytes, totalBytes > 0 else { return nil }
    return Double(bytes) / Double(totalBytes)
  }

  /// The saved progress of a download into `file`, or nil when none is interrupted there.
  public static func load(for file: URL) -> SavedProgress? {
    let paths = DownloadPaths(target: file.path)
    guard case .success(let state)? = try? StateJournal.load(from: paths.state) else { return nil }
    return SavedProgress(file: file, url: state.url, bytes: state.heldBytes, totalBytes: state.totalBytes)
  }

  /// Every interrupted download in `directory`.
  public static func all(in directory: URL) -> [SavedProgress] {
    DownloadPaths.stateFiles(in: directory.path).compactMap {
      load(for: URL(fileURLWithPath: String($0.dropLast(".haul".count))))
    }
  }
}
