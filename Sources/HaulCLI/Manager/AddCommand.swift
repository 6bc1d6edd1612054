import FoundationEssentials
import Haul

/// `haul add [download options] URL…`: queues downloads in the catalog and prints their ids,
/// one per line. The download options, `-i FILE` and its format, directories and name checks
/// are exactly those of `haul URL…` (the same option table and `BatchPlan`).
enum AddCommand {
  /// Options of `haul URL…` a queued download cannot take (the catalog cannot keep a command
  /// to run for a fresh link).
  static let notQueued = ["parallel", "version", "refresh-url-command"]

  static let subcommand = ManagerCommand.Subcommand(
    name: "add", arguments: "[download options] URL…  (or -i FILE)",
    summary: """
      Queues downloads in the catalog and prints the id of each, one per line. They run in
      `haul run`, `haul ui` or the daemon; while one of those has the catalog open, they start
      there at once. Download options are those of `haul URL…` (haul --help lists them).
      """,
    specs: CommandLineOptions.table.filter { !notQueued.contains($0.long) } + [
      ManagerCommand.flag("paused", "add them paused (haul resume starts them)"),
      .value(nil, "position", "N", "put them at place N of the waiting queue (0: next to start)") {
        options, value, spelling throws(UsageError) in
        guard let position = Int(value), position >= 0, value.allSatisfy(\.isASCII) else {
          throw UsageError("\(spelling): '\(value)' is not a place in the queue (0, 1, 2, …)")
        }
        options.extras["position"] = String(position)
        return .proceed
      },
      ManagerCommand.catalogOption, ManagerCommand.queueOption,
    ],
    run: { arguments, context in await run(arguments, context) })

  static func run(_ arguments: ManagerCommand.ParsedArguments, _ context: ManagerCommand.Context) async
    -> Int32
  {
    let sink = context.sink
    let options: CommandLineOptions
    do throws(UsageError) {
      guard
        case .download(let checked) = try CommandLineOptions.checked(
          arguments.options, urls: arguments.positionals)
      else { return ExitStatus.usage }
      options = checked
    } catch {
      return ManagerCommand.usageError("add", error.message, sink: sink)
    }
    let position = arguments.value("position").flatMap(Int.init).map(QueuePosition.index) ?? .end
    let paused = arguments.flag("paused")
    if let queue = ManagerCommand.queue(arguments, context) {
      guard arguments.value("position") == nil else {
        return ManagerCommand.usageError(
          "add", "--position orders a catalog's queue; a fleet's queue runs by priority (--queue)", sink: sink
        )
      }
      return await QueueCommands.add(options, paused: paused, queue: queue, sink: sink)
    }
    if options.insecure, !options.quiet {
      sink.stderr(
        "haul: warning: --insecure: TLS certificates, host names and SSH host keys will not be checked\n")
    }
    let access: CatalogAccess
    let requests: [DownloadRequest]
    do throws(HaulError) {
      let location = try ManagerCommand.location(arguments, context)
      requests = try self.requests(options, sink: sink)
      if requests.isEmpty { return ExitStatus.success }
      access = try await CatalogAccess.open(location, creating: true)
    } catch {
      return HaulCommand.setupFailure(error, json: options.json, sink: sink)
    }
    let ids: [DownloadID]
    do throws(HaulError) {
      ids = try await access.add(requests, at: position, paused: paused)
    } catch {
      await access.close()
      return HaulCommand.setupFailure(error, json: options.json, sink: sink)
    }
    await access.close()
    var out = ""
    for (id, request) in zip(ids, requests) {
      if options.json {
        out += JSONEventLine.object([("id", .string(id.description)), ("url", .string(request.url))]) + "\n"
      } else if !options.quiet {
        out += id.description + "\n"
      }
    }
    sink.stdout(out)
    if !options.quiet, case .direct = access { warnAboutSecrets(ids: ids, requests: requests, sink: sink) }
    return ExitStatus.success
  }

  /// What the command line asks to add: one URL with `-o` (as `haul -o FILE URL`), else what
  /// a batch would download (`BatchPlan`: URLs, `-i FILE`, name checks, directories made).
  static func requests(_ options: CommandLineOptions, sink: OutputSink) throws(HaulError) -> [DownloadRequest]
  {
    try refuseStandardOutput(options, for: "a download added to the catalog")
    guard options.output == nil else {
      return [
        DownloadRequest(
          url: options.url, to: HaulCommand.destination(for: options), options: options.downloadOptions)
      ]
    }
    let plan = try BatchPlan.make(options)
    BatchPlan.tell(plan.notes + plan.renamed.map(\.note), options: options, sink: sink)
    return plan.jobs.map { DownloadRequest(url: $0.source, to: $0.destination, options: $0.options) }
  }

  /// `-o -` names this terminal's standard output: a download that runs later, in another
  /// process (or on another host), has none to write to (it would make a file named `-`).
  static func refuseStandardOutput(_ options: CommandLineOptions, for what: String) throws(HaulError) {
    guard options.output == "-" else { return }
    throw HaulError(
      .invalidInput, "-o - writes to standard output, which \(what) does not have",
      hint: "name a file with -o FILE, or download it now: haul -o - URL")
  }

  /// The catalog keeps no password or credential header: a download added by a process that
  /// ends now waits for them (paused) when the catalog is next opened.
  private static func warnAboutSecrets(ids: [DownloadID], requests: [DownloadRequest], sink: OutputSink) {
    let needing = zip(ids, requests).filter { _, request in
      let url = (try? RequestURL.normalize(request.url)) ?? request.url
      let secretHeaders = StoredOptions.split(request.options).secretHeaders
      return RequestURL.withoutPassword(url) != url
        || !SecretParts.of(request.options, secretHeaders: secretHeaders).isEmpty
    }
    guard !needing.isEmpty else { return }
    let listed =
      needing.prefix(3).map { $0.0.description }.joined(separator: ", ") + (needing.count > 3 ? ", …" : "")
    sink.stderr(
      "haul: warning: the catalog keeps no password (of the URL or -u) and no cookies or Authorization, "
        + "Proxy-Authorization or Cookie header: \(listed) will wait, paused, for them\n"
        + "haul: add such downloads while haul run or haul ui is running (it keeps them in memory)\n")
  }
}
