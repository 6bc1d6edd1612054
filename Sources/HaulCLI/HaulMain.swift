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
    // Copied before a queue URL's password is blanked in the process's own argument memory.
    let arguments = Array(CommandLine.arguments.dropFirst())
    ArgumentPasswords.hide()
    let status = await HaulCommand.run(arguments: arguments)
    exit(status)
  }
}
