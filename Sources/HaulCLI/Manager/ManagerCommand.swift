import FoundationEssentials
import Haul

/// The subcommands on the download manager's catalog: `haul add|ls|pause|resume|rm|run|ui`.
///
/// A subcommand is recognised only as the first argument, so `haul URL…` is unchanged: a
/// download of a file or URL spelled like a subcommand is `haul -- ls` or `haul ./ls`.
enum ManagerCommand {
  /// What every subcommand is given: its options and where its catalog is.
  struct Context: Sendable {
    let sink: OutputSink
    let environment: [String: String]
  }

  /// A subcommand: its name, what it takes, and what it runs.
  struct Subcommand: Sendable {
    let name: String
    /// What follows the name in its usage line (`[options] ID…|--all`).
    let arguments: String
    let summary: String
    let specs: [OptionSpec]
    let run: @Sendable (ParsedArguments, Context) async -> Int32

    var usage: String { "haul \(name) \(arguments)" }

    var helpText: String {
      var lines = ["Usage: \(usage)", "", summary, "", "Options:"]
      let synopses = specs.map(\.synopsis)
      let column = (synopses.map(\.count).max() ?? 0) + 2
      for (spec, synopsis) in zip(specs, synopses) {
        lines.append("  " + synopsis + String(repeating: " ", count: column - synopsis.count) + spec.help)
      }
      return lines.joined(separator: "\n") + "\n"
    }
  }

  /// A subcommand's command line, read by its selection of the option table.
  struct ParsedArguments: Sendable {
    let options: CommandLineOptions
    let positionals: [String]

    func flag(_ name: String) -> Bool { options.extras[name] != nil }
    func value(_ name: String) -> String? { options.extras[name] }
  }

  static let all: [Subcommand] = [
    AddCommand.subcommand, ListCommand.subcommand, ChangeCommand.pause, ChangeCommand.resume,
    ChangeCommand.remove, RunCommand.subcommand, UICommand.subcommand,
  ]

  static func named(_ name: String) -> Subcommand? { all.first { $0.name == name } }

  /// Runs `subcommand` with the arguments after its name.
  static func run(
    _ subcommand: Subcommand, _ arguments: [String], sink: OutputSink,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) async -> Int32 {
    let parsed: ParsedArguments
    do throws(UsageError) {
      let (options, positionals, stop) = try CommandLineOptions.scan(arguments, specs: subcommand.specs)
      if stop == .help {
        sink.stdout(subcommand.helpText)
        return ExitStatus.success
      }
      parsed = ParsedArguments(options: options, positionals: positionals)
    } catch {
      sink.stderr("haul \(subcommand.name): \(error.message)\nTry 'haul \(subcommand.name) --help'.\n")
      return ExitStatus.usage
    }
    return await subcommand.run(parsed, Context(sink: sink, environment: environment))
  }

  /// A usage error found after parsing.
  static func usageError(_ subcommand: String, _ message: String, sink: OutputSink) -> Int32 {
    sink.stderr("haul \(subcommand): \(message)\nTry 'haul \(subcommand) --help'.\n")
    return ExitStatus.usage
  }

  /// A failure: `haul: message` and `haul: hint` on standard error (for a mistake without a
  /// hint, the pointer to the subcommand's help); its exit status.
  static func failure(_ error: HaulError, _ subcommand: String, sink: OutputSink) -> Int32 {
    var lines = error.message.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if let hint = error.hint { lines.append(hint) }
    var text = lines.map { "haul: " + ProgressLine.sanitize($0) + "\n" }.joined()
    if error.category == .invalidInput, error.hint == nil { text += "Try 'haul \(subcommand) --help'.\n" }
    sink.stderr(text)
    return ExitStatus.code(for: error)
  }

  /// The catalog the options name (or the default one).
  static func location(_ arguments: ParsedArguments, _ context: Context) throws(HaulError) -> CatalogLocation
  {
    try CatalogLocation.resolve(arguments.value("catalog"), environment: context.environment)
  }

  /// The PostgreSQL queue of `--queue` or `HAUL_QUEUE`, if any (`--catalog` wins over the variable).
  static func queue(_ arguments: ParsedArguments, _ context: Context) -> String? {
    if let given = arguments.value("queue") { return given }
    guard arguments.value("catalog") == nil,
      let variable = context.environment[PostgresAddress.environmentVariable], !variable.isEmpty
    else { return nil }
    return variable
  }

  // MARK: - Options every subcommand may take

  /// The table's specs with these long names, in the table's order.
  static func table(_ names: Set<String>) -> [OptionSpec] {
    CommandLineOptions.table.filter { names.contains($0.long) }
  }

  static let catalogOption = OptionSpec.value(
    nil, "catalog", "FILE", "the catalog (default: $XDG_DATA_HOME/haul/catalog.sqlite)"
  ) { options, value, spelling throws(UsageError) in
    options.extras["catalog"] = try CommandLineOptions.nonEmpty(
      value, spelling: spelling, "the catalog's name")
    return .proceed
  }

  static let queueOption = OptionSpec.value(
    nil, "queue", "URL", "a fleet's PostgreSQL queue instead of the catalog (default: $HAUL_QUEUE)"
  ) { options, value, spelling throws(UsageError) in
    options.extras["queue"] = try CommandLineOptions.nonEmpty(
      value, spelling: spelling, "the queue's address")
    return .proceed
  }

  static func flag(_ long: String, _ help: String) -> OptionSpec {
    .flag(nil, long, help) { options in
      options.extras[long] = ""
      return .proceed
    }
  }
}
