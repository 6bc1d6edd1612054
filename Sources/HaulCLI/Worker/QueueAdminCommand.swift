import FoundationEssentials
import Haul

/// `haul queue [--queue URL] status|priority|limit|retry`: what a fleet's operator changes on the
/// whole queue from any host (jobs themselves are added, listed, paused, resumed and removed with
/// `haul add|ls|pause|resume|rm --queue`).
enum QueueAdminCommand {
  static let usage = "Usage: haul queue [--queue URL] status|priority N ID…|limit N [ORIGIN]|retry ID…|--all"

  static let helpText = """
    \(usage)

    Operates on a fleet's PostgreSQL queue (--queue URL, default: $HAUL_QUEUE):
      status              jobs in each state; each origin's connection limit, connections in use
                          and jobs waiting
      priority N ID…      higher runs first (-1000000 to 1000000, default 0); waiting jobs move at once
      limit N [ORIGIN]    at most N connections to ORIGIN (https://host[:port]) over the whole fleet;
                          without ORIGIN, the default of every origin without a limit of its own (4)
      retry ID…|--all     queue failed jobs again from scratch
    Ids are 16 hex digits, or a unique prefix of 4 or more (haul ls --queue shows them).

    """

  /// A parsed command line.
  enum Request: Equatable {
    case help
    case status
    case priority(Int, ids: [String])
    case limit(Int, origin: String?)
    case retry(ids: [String]?)
  }

  static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> (
    request: Request, queue: String?
  ) {
    var queue = environment[PostgresAddress.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    var words: [String] = []
    var all = false
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "-h", "--help": return (.help, queue)
      case "--all": all = true
      case "--queue":
        guard let value = rest.popFirst(), !value.isEmpty else { throw UsageError("--queue needs a value") }
        queue = value
      case let option where option.hasPrefix("--queue="):
        queue = String(option.dropFirst("--queue=".count))
      case let option where option.hasPrefix("-") && Int(option) == nil:
        throw UsageError("haul queue has no option \(option)")
      default: words.append(argument)
      }
    }
    guard let verb = words.first else {
      throw UsageError("haul queue needs a command: status, priority, limit or retry")
    }
    let operands = Array(words.dropFirst())
    func number(_ text: String?, _ what: String) throws(UsageError) -> Int {
      guard let text, let value = Int(text) else {
        throw UsageError("\(verb) needs \(what) (a whole number)")
      }
      return value
    }
    switch verb {
    case "status":
      guard operands.isEmpty else { throw UsageError("status takes no operands") }
      return (.status, queue)
    case "priority":
      let priority = try number(operands.first, "a priority")
      guard operands.count > 1 else { throw UsageError("priority needs the ids of the jobs") }
      return (.priority(priority, ids: Array(operands.dropFirst())), queue)
    case "limit":
      let limit = try number(operands.first, "a number of connections")
      guard operands.count <= 2 else { throw UsageError("limit takes a number and at most one origin") }
      return (.limit(limit, origin: operands.count == 2 ? operands[1] : nil), queue)
    case "retry":
      guard all != !operands.isEmpty else { throw UsageError("retry needs the ids of the jobs, or --all") }
      return (.retry(ids: all ? nil : operands), queue)
    case "add", "ls", "pause", "resume", "rm":
      // Jobs are handled by the catalog's commands on the queue: say which, rather than "no command".
      throw UsageError(
        "jobs are added, listed, paused, resumed and removed with 'haul \(verb) --queue URL …' "
          + "(or with HAUL_QUEUE set); haul queue itself has status, priority, limit and retry")
    default:
      throw UsageError(
        "haul queue has no command '\(ProgressLine.sanitize(verb))' (status, priority, limit, retry)")
    }
  }

  static func run(
    _ arguments: [String], sink: OutputSink,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) async -> Int32 {
    let request: Request
    let given: String?
    do throws(UsageError) {
      (request, given) = try parse(arguments, environment: environment)
    } catch {
      sink.stderr("haul: \(error.message)\nTry 'haul queue --help'.\n")
      return ExitStatus.usage
    }
    if request == .help {
      sink.stdout(helpText)
      return ExitStatus.success
    }
    guard let queue = given else {
      sink.stderr("haul: haul queue needs the queue: --queue postgresql://… or HAUL_QUEUE\n")
      return ExitStatus.usage
    }
    do throws(HaulError) {
      let fleet = try await FleetQueue(PostgresAddress(queue), applicationName: "haul queue")
      switch request {
      case .help: break
      case .status: sink.stdout(try await status(fleet))
      case .priority(let priority, let given):
        let changed = try await fleet.setPriority(priority, of: try await resolve(given, in: fleet))
        sink.stderr(changed.map { "haul: \($0) has priority \(priority)\n" }.joined())
      case .limit(let limit, let origin):
        try await fleet.setConnectionLimit(limit, for: origin)
        let connections = limit == 1 ? "1 connection" : "\(limit) connections"
        let target = origin.map(ProgressLine.sanitize) ?? "each origin without a limit of its own"
        sink.stderr("haul: at most \(connections) to \(target) over the fleet\n")
      case .retry(let given):
        var ids: [String]?
        if let given { ids = try await resolve(given, in: fleet) }
        let changed = try await fleet.retry(ids)
        sink.stderr(changed.map { "haul: queued \($0) again\n" }.joined())
        if changed.isEmpty, let ids {
          // Jobs named that are not failed refuse the change (exit 1, as pause of a complete one).
          sink.stderr(
            "haul: no failed job to retry: \(ids.joined(separator: ", ")) \(ids.count == 1 ? "is" : "are") not failed\n"
          )
          await fleet.close()
          return ExitStatus.generic
        }
        if changed.isEmpty { sink.stderr("haul: no failed job to retry\n") }
      }
      await fleet.close()
      return ExitStatus.success
    } catch {
      return HaulCommand.setupFailure(error, json: false, sink: sink)
    }
  }

  /// Ids or unique prefixes as the queue's job ids, paging through the queue.
  static func resolve(_ given: [String], in fleet: FleetQueue) async throws(HaulError) -> [String] {
    var matcher = IDResolver.Matcher(try IDResolver(given))
    var after: String?
    while true {
      let page = try await fleet.jobs(includeRemoved: true, limit: 10_000, after: after)
      for job in page { matcher.feed(job.id) }
      guard page.count == 10_000, let last = page.last else { break }
      after = last.id
    }
    return try matcher.result()
  }

  static func status(_ fleet: FleetQueue) async throws(HaulError) -> String {
    let counts = try await fleet.counts()
    let states: [FleetJob.State] = [.queued, .delayed, .active, .paused, .complete, .failed, .removed]
    var text =
      "jobs: " + states.map { "\(counts[$0, default: 0]) \($0.rawValue)" }.joined(separator: ", ") + "\n"
    let limits = try await fleet.connectionLimits()
    text += "connections per origin over the fleet: \(limits.defaultLimit) unless set\n"
    if !limits.origins.isEmpty {
      let width = min(60, limits.origins.map(\.origin.count).max() ?? 0)
      text += "ORIGIN" + String(repeating: " ", count: max(0, width - 6)) + "  LIMIT  ACTIVE  WAITING\n"
      for origin in limits.origins {
        let name = ProgressLine.sanitize(origin.origin)
        text +=
          name + String(repeating: " ", count: max(0, width - name.count))
          + "  " + pad(origin.limit, 5) + "  " + pad(origin.active, 6) + "  " + pad(origin.queued, 7) + "\n"
      }
    }
    return text
  }

  private static func pad(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
  }
}
