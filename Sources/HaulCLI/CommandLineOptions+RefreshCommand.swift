import Dispatch
import FoundationEssentials
import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `--refresh-url-command CMD`: `/bin/sh -c CMD` with the expired URL in `HAUL_URL`; the first
/// line of its standard output is the fresh URL. Its standard error is the user's terminal; its
/// standard input is /dev/null.
///
///     haul -o big.iso --refresh-url-command 'curl -s https://api.example/sign?f=big.iso' URL
enum RefreshCommand {
  /// What the command printed and how it ended.
  struct Result: Equatable {
    var output: [UInt8]
    /// The exit status, or the signal when `signaled`.
    var status: Int32
    var signaled: Bool
  }

  /// Standard output read at most (the rest is read and dropped, so the command never blocks).
  static let outputLimit = 64 << 10

  /// `DownloadOptions.refreshURL` for `command`.
  static func refresher(_ command: String) -> @Sendable (String) async throws -> String? {
    { expired in
      let result = try await onThread { () throws(HaulError) in try run(command, url: expired) }
      return try freshURL(result)
    }
  }

  /// The fresh URL in what the command printed, or the error that says why there is none.
  static func freshURL(_ result: Result) throws(HaulError) -> String {
    guard result.status == 0, !result.signaled else {
      let end =
        result.signaled ? "was killed by signal \(result.status)" : "exited with status \(result.status)"
      throw HaulError(.generic, "--refresh-url-command \(end)")
    }
    let text = String(decoding: result.output, as: UTF8.self)
    let line =
      text.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: \.isNewline).first ?? ""
    let url = String(line.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    guard !url.isEmpty else { throw HaulError(.generic, "--refresh-url-command printed no URL") }
    return url
  }

  /// Runs the command to its end (blocking: call it off Swift's cooperative threads).
  static func run(_ command: String, url: String) throws(HaulError) -> Result {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw failure("a pipe", errno) }
    // Neither end lives on in the child but as its standard output.
    _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
    defer { if ends[0] >= 0 { close(ends[0]) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // The child starts with no signal blocked and every signal at its default.
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let environment =
      ProcessInfo.processInfo.environment.filter { $0.key != "HAUL_URL" }.map { "\($0.key)=\($0.value)" }
      + ["HAUL_URL=\(url)"]
    let words: [String] = ["/bin/sh", "-c", command]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
    defer {
      for pointer in argv { free(pointer) }
      for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
    close(ends[1])
    guard spawned == 0 else { throw failure("/bin/sh", spawned) }
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
      if count < 0, errno == EINTR { continue }
      guard count > 0 else { break }
      if output.count < outputLimit { output += buffer[0..<min(count, outputLimit - output.count)] }
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1, errno == EINTR {}
    let signal = status & 0x7f
    return Result(output: output, status: signal == 0 ? (status >> 8) & 0xff : signal, signaled: signal != 0)
  }

  private static func failure(_ what: String, _ code: Int32) -> HaulError {
    HaulError(.generic, "--refresh-url-command: could not start \(what): \(String(cString: strerror(code)))")
  }

  /// Runs blocking work on a thread of the system's pool, not one of the cooperative ones.
  private static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws(HaulError) -> T)
    async throws(HaulError) -> T
  {
    let result: Swift.Result<T, HaulError> = await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        do throws(HaulError) { continuation.resume(returning: .success(try work())) } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    return try result.get()
  }
}
