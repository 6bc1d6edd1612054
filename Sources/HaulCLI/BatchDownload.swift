import Dispatch
import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Several URLs in one run (`haul URL URL…`, `-i FILE`): up to `-j` downloads at once into one
/// directory, one line per finished file, and an exit status that says whether all succeeded.
enum BatchDownload {
  /// URLs from an input file: one per line; blank lines and lines starting with `#` are skipped.
  static func urls(inList text: String) -> [String] {
    text.split(whereSeparator: \.isNewline).compactMap { line in
      guard let first = line.firstIndex(where: { !$0.isWhitespace }),
        let last = line.lastIndex(where: { !$0.isWhitespace })
      else { return nil }
      let url = String(line[first...last])
      return url.hasPrefix("#") ? nil : url
    }
  }

  /// The command line's URLs followed by the input file's.
  static func allURLs(
    _ options: CommandLineOptions,
    readStandardInput: () -> Data = { (try? readAll(STDIN_FILENO).get()) ?? Data() }
  ) throws(UsageError) -> [String] {
    guard let path = options.inputFile else { return options.urls }
    let data: Data
    if path == "-" {
      data = readStandardInput()
    } else {
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      let read = fd < 0 ? .failure(ReadFailure(errno: errno)) : readAll(fd)
      if fd >= 0 { close(fd) }
      switch read {
      case .success(let bytes): data = bytes
      case .failure(let failure):
        throw UsageError("--input-file: cannot read \(path) (\(String(cString: strerror(failure.errno))))")
      }
    }
    let listed = urls(inList: String(decoding: data, as: UTF8.self))
    let all = options.urls + listed
    guard !all.isEmpty else { throw UsageError("--input-file: \(path) lists no URL") }
    return all
  }

  struct ReadFailure: Error {
    let errno: Int32
  }

  /// Everything `fd` has to read, or the errno of a failed read.
  static func readAll(_ fd: Int32) -> Result<Data, ReadFailure> {
    var data = Data()
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count == 0 { return .success(data) }
      if count < 0 {
        if errno == EINTR { continue }
        return .failure(ReadFailure(errno: errno))
      }
      data.append(contentsOf: chunk[0..<count])
    }
  }

  /// The exit status of a batch (nil: a URL that was not started): 130 when interrupted, else
  /// the status of the first failure in the order the URLs were given, else success.
  static func exitStatus(_ statuses: [Int32?], interrupted: Bool) -> Int32 {
    if interrupted { return ExitStatus.interrupted }
    return statuses.lazy.compactMap { $0 }.first { $0 != ExitStatus.success } ?? ExitStatus.success
  }

  static func run(_ options: CommandLineOptions, sink: OutputSink) async -> Int32 {
    let urls: [String]
    do throws(UsageError) { urls = try allURLs(options) } catch {
      sink.stderr(HaulCommand.usageErrorText(error))
      return ExitStatus.usage
    }
    let directory = options.directory ?? "."
    var info = stat()
    guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
      // Said once, not once per URL.
      sink.stderr(
        "haul: the directory \(directory) does not exist\nhaul: create it first, or choose another with --dir\n"
      )
      return ExitStatus.code(for: HaulError(.fileSystem, "no directory"))
    }
    let clockStart = ContinuousClock.now
    let style = HaulCommand.reporterStyle(for: options, stderrIsTerminal: Terminal.stderrIsTerminal)
    let reporter = BatchReporter(
      style: style, sink: sink, urls: urls,
      now: { (ContinuousClock.now - clockStart) / .seconds(1) }, width: { Terminal.stderrWidth() })
    let (events, continuation) = AsyncStream.makeStream(
      of: (Int, DownloadEvent).self, bufferingPolicy: .bufferingNewest(1 << 16))
    let consumer = Task {
      var reporter = reporter
      for await (index, event) in events { reporter.handle(index, event) }
      return reporter
    }
    let running = RunningDownloads()
    let interrupts = InterruptHandler(
      first: { running.stopAll() },
      again: {
        sink.stderr(style == .terminal ? "\n" : "")
        exit(ExitStatus.interrupted)
      })
    defer { interrupts.stop() }

    let destination = DownloadDestination.directory(URL(fileURLWithPath: directory, isDirectory: true))
    let downloadOptions = options.downloadOptions
    var statuses = [Int32?](repeating: nil, count: urls.count)
    await withTaskGroup(of: (Int, Int32).self) { group in
      var next = 0
      func startNext() {
        let index = next
        next += 1
        group.addTask {
          await one(
            index: index, url: urls[index], destination: destination, options: downloadOptions,
            running: running, events: continuation)
        }
      }
      while next < min(urls.count, options.parallel ?? CommandLineOptions.defaultParallel) { startNext() }
      while let (index, status) = await group.next() {
        statuses[index] = status
        if next < urls.count, !running.isStopped { startNext() }
      }
    }
    continuation.finish()
    var finished = await consumer.value
    finished.finish(statuses: statuses, interrupted: running.isStopped)
    return exitStatus(statuses, interrupted: running.isStopped)
  }

  /// One URL of the batch, start to end; its events go to the shared stream.
  private static func one(
    index: Int, url: String, destination: DownloadDestination, options: DownloadOptions,
    running: RunningDownloads, events: AsyncStream<(Int, DownloadEvent)>.Continuation
  ) async -> (Int, Int32) {
    let download: Download
    do throws(HaulError) {
      download = try Download(url: url, to: destination, options: options)
    } catch {
      events.yield((index, .failed(error)))
      return (index, ExitStatus.code(for: error))
    }
    guard running.add(download) else { return (index, ExitStatus.interrupted) }
    defer { running.remove(download) }
    let forward = Task {
      for await event in download.events { events.yield((index, event)) }
    }
    let status = await ExitStatus.run(download)
    await forward.value
    return (index, status)
  }
}

/// The downloads of a batch that are running, so that Ctrl-C can stop them all and no new
/// one starts afterwards.
final class RunningDownloads: @unchecked Sendable {
  /// Serializes `downloads` and `stopped` (a queue: Foundation's locks would load all of it).
  private let lock = DispatchQueue(label: "haul.batch")
  private var downloads: [ObjectIdentifier: Download] = [:]
  private var stopped = false

  var isStopped: Bool { lock.sync { stopped } }

  /// false when the batch was stopped: the download must not start.
  func add(_ download: Download) -> Bool {
    lock.sync {
      guard !stopped else { return false }
      downloads[ObjectIdentifier(download)] = download
      return true
    }
  }

  func remove(_ download: Download) {
    _ = lock.sync { downloads.removeValue(forKey: ObjectIdentifier(download)) }
  }

  func stopAll() {
    let stopping = lock.sync {
      stopped = true
      return Array(downloads.values)
    }
    for download in stopping { download.cancel(keepPartial: true) }
  }
}

/// What the user sees of a batch: a line per finished or failed download, messages prefixed
/// with the file's name, and on a terminal one status line for the whole batch.
/// A value type owned by the task that consumes the batch's events.
struct BatchReporter: Sendable {
  let style: Reporter.Style
  let sink: OutputSink
  let urls: [String]
  let now: @Sendable () -> Double
  let width: @Sendable () -> Int

  private var names: [Int: String] = [:]
  /// The latest progress of each running download.
  private var progress: [Int: DownloadProgress] = [:]
  private var done = 0
  private var failed = 0
  private var lineShown = false
  private var lastDraw = -Double.infinity

  init(
    style: Reporter.Style, sink: OutputSink, urls: [String], now: @escaping @Sendable () -> Double,
    width: @escaping @Sendable () -> Int = { 80 }
  ) {
    self.style = style
    self.sink = sink
    self.urls = urls
    self.now = now
    self.width = width
  }

  mutating func handle(_ index: Int, _ event: DownloadEvent) {
    if style == .json {
      sink.stdout(JSONEventLine.encode(event, source: urls[index]) + "\n")
      if case .failed(let error) = event { sink.stderr(prefixed(Reporter.errorText(error), index)) }
      return
    }
    switch event {
    case .started(let start):
      names[index] = start.file.lastPathComponent
    case .progress(let update):
      progress[index] = update
      drawIfDue()
    case .paused, .resumed:
      break
    case .restarted(let reason):
      message(prefixed("haul: " + ProgressLine.sanitize(reason) + "; starting over\n", index))
    case .retrying(let notice):
      message(prefixed("haul: " + Reporter.retryText(notice) + "\n", index))
    case .completed(let result):
      progress[index] = nil
      done += 1
      message(Reporter.summary(result, path: Reporter.relativePath(result.file)) + "\n")
      drawIfDue()
    case .failed(let error):
      progress[index] = nil
      done += 1
      failed += 1
      message(prefixed(Reporter.errorText(error), index), isFailure: true)
      drawIfDue()
    }
  }

  /// The closing line (`haul: 1000 URLs: 998 done, 2 failed`); nil statuses were not started.
  mutating func finish(statuses: [Int32?], interrupted: Bool) {
    clearLine()
    guard style != .json else { return }
    let succeeded = statuses.filter { $0 == ExitStatus.success }.count
    let stopped = statuses.filter { $0 == ExitStatus.interrupted }.count
    let failures = statuses.filter { $0 != nil }.count - succeeded - stopped
    let notStarted = statuses.filter { $0 == nil }.count
    guard style != .quiet || failures > 0 else { return }
    var text = "haul: \(statuses.count) URLs: \(succeeded) done"
    if failures > 0 { text += ", \(failures) failed" }
    if stopped > 0 { text += ", \(stopped) stopped" }
    if notStarted > 0 { text += ", \(notStarted) not started" }
    if interrupted { text += "; run the same command again to resume" }
    sink.stderr(text + "\n")
  }

  /// `haul: name: …` for each line of `text` (the URL until the name is known).
  private func prefixed(_ text: String, _ index: Int) -> String {
    let label = ProgressLine.sanitize(names[index] ?? urls[index])
    return text.split(separator: "\n").map { line in
      "haul: \(label): " + (line.hasPrefix("haul: ") ? line.dropFirst(6) : line[...])
    }.joined(separator: "\n") + "\n"
  }

  /// A line above the status line; in quiet mode only failures.
  private mutating func message(_ text: String, isFailure: Bool = false) {
    guard style != .quiet || isFailure else { return }
    clearLine()
    sink.stderr(text)
  }

  /// `[12/1000] 3 running · 41.2 MiB/s` on a terminal, redrawn at most ten times a second.
  private mutating func drawIfDue() {
    guard style == .terminal else { return }
    let time = now()
    guard time - lastDraw >= Reporter.redrawInterval else { return }
    lastDraw = time
    let speed = progress.values.reduce(0) { $0 + $1.bytesPerSecond }
    var line = "[\(done)/\(urls.count)] \(progress.count) running · " + ByteQuantity.formatRate(speed)
    if failed > 0 { line += " · \(failed) failed" }
    sink.stderr("\r" + String(line.prefix(max(20, width() - 1))) + Terminal.clearToEnd)
    lineShown = true
  }

  private mutating func clearLine() {
    guard lineShown else { return }
    sink.stderr("\r" + Terminal.clearToEnd)
    lineShown = false
  }
}
