import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@main
struct HaulMain {
  static func main() async {
    // This process exits as soon as the command returns (see `InterruptHandler.stop()`).
    InterruptHandler.ignoresSignalsAfterStop.withLock { $0 = true }
    let status = await HaulCommand.run(arguments: Array(CommandLine.arguments.dropFirst()))
    exit(status)
  }
}
