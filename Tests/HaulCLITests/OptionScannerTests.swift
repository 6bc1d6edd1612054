import Haul
import Testing

@testable import HaulCLI

/// The scanner `haul daemon` and `haul worker` share: their valid command lines read as they
/// did with the hand-rolled loops, and a typo gets the main command's suggestion.
@Suite struct OptionScannerTests {
  private static func daemon(_ change: (inout DaemonOptions) -> Void) -> DaemonOptions {
    var options = DaemonOptions()
    change(&options)
    return options
  }

  private static func worker(_ change: (inout WorkerOptions) -> Void) -> WorkerOptions {
    var options = WorkerOptions()
    change(&options)
    return options
  }

  @Test(arguments: [
    ([], daemon { _ in }),
    (
      ["--catalog", "c.sqlite", "-d", "dl", "--rpc-listen-port", "0", "--rpc-secret=s"],
      daemon {
        $0.catalog = "c.sqlite"
        $0.directory = "dl"
        $0.port = 0
        $0.secret = "s"
      }
    ),
    (["-ddl", "-j3"], daemon { ($0.directory, $0.maxConcurrentDownloads) = ("dl", 3) }),
    (
      ["--dir=dl", "--max-concurrent-downloads", "2", "--max-overall-download-limit=20M"],
      daemon { ($0.directory, $0.maxConcurrentDownloads, $0.overallLimit) = ("dl", 2, 20 << 20) }
    ),
    (
      ["--rpc-listen-all", "--rpc-secret-file", "/f", "--rpc-allow-origin-all"],
      daemon { ($0.listenAll, $0.secretFile, $0.allowOriginAll) = (true, "/f", true) }
    ),
    (
      ["--rpc-allow-host", "a.lan", "--rpc-allow-host=b.lan", "--rpc-max-request-size", "8K"],
      daemon { ($0.allowedHosts, $0.maximumRequestSize) = (["a.lan", "b.lan"], 8192) }
    ),
    (["-q", "--help"], daemon { ($0.quiet, $0.help) = (true, true) }),
    (["--quiet", "-h"], daemon { ($0.quiet, $0.help) = (true, true) }),
    // A value may start with a dash, as in the main command.
    (["-d", "-q"], daemon { $0.directory = "-q" }),
  ])
  func daemonCommandLines(arguments: [String], expected: DaemonOptions) throws {
    #expect(try DaemonOptions.parse(arguments) == expected)
  }

  @Test(arguments: [
    (["--queue", "postgresql://h/d"], worker { $0.queue = "postgresql://h/d" }),
    (
      ["--queue=postgresql://h/d", "-j8", "--name", "w1", "-dbase", "--lease", "10"],
      worker {
        $0.queue = "postgresql://h/d"
        $0.jobs = 8
        $0.name = "w1"
        $0.directory = "base"
        $0.leaseSeconds = 10
      }
    ),
    (
      ["--queue", "q", "--jobs=2", "--dir", "b", "--limit-rate", "1M", "-H", "A: 1", "-HB: 2"],
      worker {
        ($0.queue, $0.jobs, $0.directory, $0.rateLimit) = ("q", 2, "b", 1 << 20)
        $0.headers = [.init(name: "A", value: "1"), .init(name: "B", value: "2")]
      }
    ),
    (
      ["--queue", "q", "--header=C: 3", "--exit-when-idle", "--json", "-q"],
      worker {
        ($0.queue, $0.exitWhenIdle, $0.json, $0.quiet) = ("q", true, true, true)
        $0.headers = [.init(name: "C", value: "3")]
      }
    ),
    (["-h"], worker { $0.help = true }),
    (["--help"], worker { $0.help = true }),
  ])
  func workerCommandLines(arguments: [String], expected: WorkerOptions) throws {
    #expect(try WorkerOptions.parse(arguments, environment: [:]) == expected)
  }

  @Test func workerQueueFromTheEnvironment() throws {
    let options = try WorkerOptions.parse(["-j", "2"], environment: ["HAUL_QUEUE": "postgresql://e/d"])
    #expect(options == Self.worker { ($0.queue, $0.jobs) = ("postgresql://e/d", 2) })
  }

  @Test(arguments: [
    (["--rpc-secert", "s"], "daemon: unknown option '--rpc-secert' (did you mean '--rpc-secret'?)"),
    (
      ["--rpc-listen-prot=0"],
      "daemon: unknown option '--rpc-listen-prot' (did you mean '--rpc-listen-port'?)"
    ),
    (["--quite"], "daemon: unknown option '--quite' (did you mean '--quiet'?)"),
    (["--catalgo", "c"], "daemon: unknown option '--catalgo' (did you mean '--catalog'?)"),
    (["-dir", "x"], "daemon: unknown option '-dir' (did you mean '--dir'?)"),
    (["--bogus"], "daemon: unknown option '--bogus'"),
    (["-x"], "daemon: unknown option '-x'"),
    (["-qx"], "daemon: unknown option '-x'"),
    (["--"], "daemon: unknown option '--'"),
    (["extra"], "daemon: unexpected argument 'extra' (it takes options only)"),
    (["--dir"], "--dir needs a value"),
    (["-j"], "-j needs a value"),
    (["--dir="], "--dir needs a value"),
    (["--quiet=yes"], "--quiet: takes no value"),
    (["--rpc-listen-port", "70000"], "--rpc-listen-port: '70000' is not a port from 0 to 65535"),
    (["-j0"], "-j: '0' is not a number from 1 to 64"),
  ])
  func daemonMistakes(arguments: [String], message: String) {
    #expect(throws: UsageError(message)) { try DaemonOptions.parse(arguments) }
  }

  @Test(arguments: [
    (["--queu", "q"], "worker: unknown option '--queu' (did you mean '--queue'?)"),
    (["--limit-rte", "1M"], "worker: unknown option '--limit-rte' (did you mean '--limit-rate'?)"),
    (["--exit-when-idel"], "worker: unknown option '--exit-when-idel' (did you mean '--exit-when-idle'?)"),
    (["--jsno"], "worker: unknown option '--jsno' (did you mean '--json'?)"),
    (["--retry-delay", "5"], "worker: unknown option '--retry-delay'"),
    (["-json"], "worker: unknown option '-json' (did you mean '--json'?)"),
    (["postgresql://h/d"], "worker: unexpected argument 'postgresql://h/d' (it takes options only)"),
    (["--queue"], "--queue needs a value"),
    (["--queue", "q", "-j", "300"], "-j: '300' is not a number of jobs from 1 to 256"),
    (["--queue", "q", "--json=1"], "--json: takes no value"),
  ])
  func workerMistakes(arguments: [String], message: String) {
    #expect(throws: UsageError(message)) { try WorkerOptions.parse(arguments, environment: [:]) }
  }

  /// The scanner itself: bundled flags, a value glued to its letter, the order kept.
  @Test func scanKeepsOrderAndSpellings() throws {
    enum Key { case flag, value }
    let scanner = OptionScanner<Key>(
      command: "test",
      options: [.init(.flag, "flag", short: "f"), .init(.value, "value", short: "v", value: true)])
    let found = try scanner.scan(["-fvX", "--value=", "-f", "--value", "--flag", "-v", "Y"])
    #expect(found.map(\.spelling) == ["-f", "-v", "--value", "-f", "--value", "-v"])
    #expect(found.map(\.value) == ["", "X", "", "", "--flag", "Y"])
    #expect(found.map(\.key) == [.flag, .value, .value, .flag, .value, .value])
  }
}
