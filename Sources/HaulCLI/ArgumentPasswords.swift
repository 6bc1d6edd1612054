#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Keeps the password of a `postgresql://user:password@host/db` argument out of other users'
/// `ps` (`/proc/PID/cmdline` shows the process's own argument memory), as MySQL's and
/// PostgreSQL's tools do: the arguments were copied for parsing already, and the copy in the
/// argument memory is overwritten with `x`. The moment between exec and this remains; `HAUL_QUEUE`
/// or `~/.pgpass` keep it out entirely.
enum ArgumentPasswords {
  /// Overwrites each such password in the process's arguments.
  static func hide() {
    let argv = CommandLine.unsafeArgv
    for index in 1..<Int(CommandLine.argc) {
      guard let argument = argv[index] else { continue }
      let count = strlen(argument)
      let bytes = UnsafeMutableRawBufferPointer(start: argument, count: count)
      guard let range = passwordRange(in: Array(bytes)) else { continue }
      for position in range { bytes[position] = UInt8(ascii: "x") }
    }
  }

  /// Where the password of the first PostgreSQL URL in `bytes` is (after `user:`, before `@`),
  /// if it has one. Pure, for tests.
  static func passwordRange(in bytes: [UInt8]) -> Range<Int>? {
    let lowered = bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
    let schemes = [Array("postgresql://".utf8), Array("postgres://".utf8)]
    var start: Int?
    for scheme in schemes where start == nil {
      start = (0...max(0, lowered.count - scheme.count)).first { index in
        index + scheme.count <= lowered.count && Array(lowered[index..<(index + scheme.count)]) == scheme
      }.map { $0 + scheme.count }
    }
    guard let authorityStart = start else { return nil }
    let authorityEnd =
      bytes[authorityStart...].firstIndex {
        $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
      }
      ?? bytes.count
    guard let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")),
      let colon = bytes[authorityStart..<at].firstIndex(of: UInt8(ascii: ":")), colon + 1 < at
    else { return nil }
    return (colon + 1)..<at
  }
}
