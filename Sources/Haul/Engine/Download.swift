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

  let gate: EventGate
  let control = DownloadControl()
  /// The download's own rate limit (`options.rateLimit` until `setRateLimit`), shared by
  /// every run of it.
  let ownRateLimit: RateLimiter
  /// Whether `run()` is running (it may not run twice at once).
  private let running = Locked(false)
  let transport: any Transport
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
    let (events, continuation) = AsyncStream.makeStream(
      of: DownloadEvent.self, bufferingPolicy: .bufferingNewest(4096))
    self.events = events
    self.gate = EventGate(continuation)
    self.ownRateLimit = RateLimiter(bytesPerSecond: options.rateLimit)
  }

  /// A download's own rate limit: positive, or nil for none (options, `setRateLimit`, the manager).
  static func validate(rateLimit: Int64?) throws(HaulError) {
    if let rateLimit, rateLimit <= 0 {
      throw HaulError(.invalidInput, "the rate limit must be positive")
    }
  }

  /// The longest interval or retry delay accepted, seconds (a year).
  static let maximumInterval: Double = 31_536_000

  private static func validate(_ options: DownloadOptions) throws(HaulError) {
    if let connections = options.connections, !(1...64).contains(connections) {
      throw HaulError(.invalidInput, "connections must be between 1 and 64 (asked for \(connections))")
    }
    try validate(rateLimit: options.rateLimit)
    guard options.maxAttemptsWithoutProgress >= 0 else {
      throw HaulError(
        .invalidInput,
        "maxAttemptsWithoutProgress must be 1 or more (asked for \(options.maxAttemptsWithoutProgress))")
    }
    guard options.stallTimeout > 0, options.stallTimeout.isFinite else {
      throw HaulError(.invalidInput, "the timeout must be a positive number of seconds")
    }
    // The engine keeps these as nanoseconds (UInt64): a negative, NaN or huge value would trap.
    let intervals = [
      ("checkpointInterval", options.checkpointInterval), ("progressInterval", options.progressInterval),
      ("retryBaseDelay", options.retryBaseDelay), ("maxRetryDelay", options.maxRetryDelay),
    ]
    for (name, seconds) in intervals where !(0...Self.maximumInterval).contains(seconds) {
      throw HaulError(
        .invalidInput,
        "\(name) must be between 0 and \(Int(Self.maximumInterval)) seconds (asked for \(seconds))")
    }
    if let name = options.fallbackFileName, FileNameSanitizer.sanitize(name, keepingLeadingDots: true) != name
    {
      throw HaulError(
        .invalidInput, "fallbackFileName must be a plain file name (asked for '\(name)')",
        hint:
          "no '/' or control characters, not ending in .part or .haul, at most \(FileNameSanitizer.maximumBytes) bytes"
      )
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
  /// Cancelling the calling task works like `cancel()`. After a failure `run()` may be called
  /// again (it resumes, though `events` has ended); after `cancel()` this `Download` is spent:
  /// `run()` throws `.interrupted`, and a new `Download` of the same URL and destination
  /// resumes the kept bytes.
  ///
  /// - Returns: the finished file, or the file that was already complete.
  /// - Throws: `HaulError`; category `.interrupted` after `cancel()`.
  @discardableResult
  public func run() async throws(HaulError) -> DownloadResult {
    guard
      running.withLock({ running in
        defer { running = true }; return !running
      })
    else {
      throw HaulError(.invalidInput, "run() is already running for this download")
    }
    defer { running.withLock { $0 = false } }
    if case .cancel = control.request {
      let error = HaulError(
        .interrupted, "this download was cancelled",
        hint: "create a new Download of the same URL to resume it")
      // Cancelled before it ran (a manager that stops a run it just started): `events` ends
      // here too, or a consumer waiting for its end waits forever.
      gate.close(with: .failed(error))
      throw error
    }
    let outcome = await runRefreshing()
    switch outcome {
    case .success(let result):
      gate.close(with: nil)
      return result
    case .failure(let error):
      gate.close(with: .failed(error))
      throw error
    }
  }

  /// Stops transferring and makes everything received durable; `run()` keeps waiting for `resume()`.
  public func pause() { control.pause() }

  /// Continues after `pause()`.
  public func resume() { control.resume() }

  /// The download's own rate limit in bytes per second (nil: none), as `setRateLimit` last
  /// set it; `options.rateLimit` at first.
  public var rateLimit: Int64? { ownRateLimit.bytesPerSecond.map { Int64($0) } }

  /// Changes the download's own rate limit while it runs, without reconnecting, from any
  /// thread. Raised or lifted, automatic mode tries more connections within half a second.
  ///
  /// ```swift
  /// try download.setRateLimit(512 << 10)   // 512 KiB/s from now on
  /// try download.setRateLimit(nil)         // no limit of its own
  /// ```
  /// - Throws: `HaulError` with category `.invalidInput` for a rate that is not positive.
  public func setRateLimit(_ bytesPerSecond: Int64?) throws(HaulError) {
    try Self.validate(rateLimit: bytesPerSecond)
    ownRateLimit.setBytesPerSecond(bytesPerSecond)
  }

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
