import FoundationEssentials
import Haul

/// What `haul run` shows of a manager's events: the batch display of `haul URL…` (a line per
/// running download above the batch's line, a line per finished one, the closing count), or
/// with `--json` one object per event carrying the download's `id`. A value type owned by the
/// task that consumes the events.
struct RunDisplay: Sendable {
  private(set) var reporter: BatchReporter
  let json: Bool
  let sink: OutputSink
  /// The URL and expected name of a download, for one that joins the display.
  let describe: @Sendable (DownloadID) -> (url: String, label: String?)
  private var indices: [DownloadID: Int] = [:]
  /// Each joined download's exit status once it ended (nil while it runs).
  private var statuses: [Int32?] = []
  /// Downloads that left without an end of their own (paused, cancelled, removed), and how:
  /// counted apart ("1 paused").
  private var left: [Int: String] = [:]

  init(
    reporter: BatchReporter, json: Bool, sink: OutputSink,
    describe: @escaping @Sendable (DownloadID) -> (url: String, label: String?)
  ) {
    self.reporter = reporter
    // A run's downloads are the catalog's, not URLs given on its command line.
    self.reporter.noun = ("download", "downloads")
    self.json = json
    self.sink = sink
    self.describe = describe
  }

  /// The display's index of `id`, joining it when it is new.
  private mutating func index(_ id: DownloadID) -> Int {
    if let index = indices[id] { return index }
    let (url, label) = describe(id)
    let index = reporter.append(url: url, label: label)
    indices[id] = index
    statuses.append(nil)
    return index
  }

  mutating func handle(_ event: DownloadManagerEvent) {
    // A failure's remedy in the manager's commands, not the library's or haul URL's.
    var event = event
    if case .failed(let id, let error) = event {
      event = .failed(id, CommandWording.manager(id).translate(error))
    }
    if json { sink.stdout(Self.jsonLine(event) + "\n") }
    let id = event.id
    switch event {
    case .started:
      let index = index(id)
      left[index] = nil
      statuses[index] = nil
    case .responded(_, let start): forward(id, .started(start))
    case .progress(_, let progress): forward(id, .progress(progress))
    case .retrying(_, let notice): forward(id, .retrying(notice))
    case .restarted(_, let reason): forward(id, .restarted(reason: reason))
    case .completed(_, let result):
      let index = index(id)
      forward(id, .completed(result))
      statuses[index] = ExitStatus.success
    case .failed(_, let error):
      let index = index(id)
      forward(id, .failed(error))
      statuses[index] = ExitStatus.code(for: error)
    case .paused: depart(id, note: "paused")
    case .removed: depart(id, note: "cancelled")
    case .forgotten: depart(id, note: "removed")
    case .added, .queued, .changed: break
    }
  }

  /// The clock moved (retry countdowns).
  mutating func tick() { reporter.tick() }

  private mutating func forward(_ id: DownloadID, _ event: DownloadEvent) {
    guard !json else { return }
    reporter.handle(index(id), event)
  }

  private mutating func depart(_ id: DownloadID, note: String) {
    guard let index = indices[id], statuses[index] == nil else { return }
    left[index] = note
    if !json { reporter.leave(index, note: note) }
  }

  /// The closing count, and the exit status: 130 when interrupted, else that of the first
  /// download that failed in the order they started, else 0. A download stopped by the end of
  /// the run counts as stopped; paused, cancelled and removed ones are counted apart, not in the
  /// exit status; `waiting` (still
  /// queued when the run ended) that never started count as not started, so that an
  /// interrupted run counts what it left to do. Under -q the count is shown only when something
  /// failed (as `haul URL… -q`), and never when nothing was counted.
  mutating func finish(interrupted: Bool, waiting: [DownloadID] = []) -> Int32 {
    var counted: [Int32?] = statuses.indices.filter { left[$0] == nil }.map {
      statuses[$0] ?? ExitStatus.interrupted
    }
    counted += waiting.filter { indices[$0] == nil }.map { _ in nil }
    let others = ["paused", "cancelled", "removed"].map { note in
      (count: left.values.count { $0 == note }, what: note)
    }
    // The reporter decides what -q shows (the count only after a failure), so that haul run and
    // the batch command agree; a run that had nothing to do said so once and counts nothing.
    if !json, !counted.isEmpty || others.contains(where: { $0.count > 0 }) {
      reporter.finish(statuses: counted, interrupted: interrupted, others: others)
    }
    return BatchDownload.exitStatus(counted, interrupted: interrupted)
  }

  /// `--json`: the batch's event objects with the download's id after `event`.
  static func jsonLine(_ event: DownloadManagerEvent) -> String {
    var fields: [(String, JSONEventLine.Value)]
    switch event {
    case .added(let download):
      fields = [("event", .string("added")), ("url", .string(download.url))]
    case .queued: fields = [("event", .string("queued"))]
    case .started: fields = [("event", .string("running"))]
    case .responded(_, let start): fields = JSONEventLine.fields(of: .started(start))
    case .progress(_, let progress): fields = JSONEventLine.fields(of: .progress(progress))
    case .retrying(_, let notice): fields = JSONEventLine.fields(of: .retrying(notice))
    case .restarted(_, let reason): fields = JSONEventLine.fields(of: .restarted(reason: reason))
    case .paused: fields = [("event", .string("paused"))]
    case .completed(_, let result): fields = JSONEventLine.fields(of: .completed(result))
    case .failed(_, let error): fields = JSONEventLine.fields(of: .failed(error))
    case .removed: fields = [("event", .string("cancelled"))]
    case .forgotten: fields = [("event", .string("removed"))]
    case .changed: fields = [("event", .string("changed"))]
    }
    fields.insert(("id", .string(event.id.description)), at: 1)
    return JSONEventLine.object(fields)
  }
}
