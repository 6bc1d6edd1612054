#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The password of `-u USER` (given without one), as curl asks for it: never on the command
/// line, where `ps` shows it to every user of the machine.
enum Credentials {
  /// Fills in the password when `-u USER` asked for one: `$HAUL_PASSWORD`, else a prompt on the
  /// terminal (without echo). Neither: a usage error saying the three ways.
  static func complete(
    _ options: inout CommandLineOptions,
    environment: (String) -> String? = CommandLineOptions.environmentValue,
    prompt: (String) -> String? = Credentials.ask
  ) throws(UsageError) {
    guard options.asksForPassword, let user = options.network.username else { return }
    if let password = environment("HAUL_PASSWORD") {
      options.network.password = password
    } else if let password = prompt("Enter the password for user '\(user)': ") {
      options.network.password = password
    } else {
      throw UsageError(
        "-u \(user): no password (give -u \(user):PASSWORD, set HAUL_PASSWORD, or run on a terminal to be asked)"
      )
    }
    options.asksForPassword = false
  }

  /// Reads a password from the terminal without echoing it; nil when there is no terminal.
  static func ask(_ prompt: String) -> String? {
    guard isatty(STDIN_FILENO) == 1, let typed = getpass(prompt) else { return nil }
    return String(cString: typed)
  }
}
