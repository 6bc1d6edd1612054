import Haul

/// The `haul` command's exit statuses.
///
/// 0 ok · 1 generic (also a state conflict: `haul pause` of a complete download) · 2 usage ·
/// 3 file I/O · 4 network · 5 TLS · 6 authentication · 7 protocol · 8 server error ·
/// 9 checksum (or a finished file changed) · 10 the catalog's owner did not answer ·
/// 130 interrupted.
enum ExitStatus {
  static let success: Int32 = 0
  /// Some other error; also a download (or fleet job) whose state refuses the change asked.
  static let generic: Int32 = 1
  static let usage: Int32 = 2
  /// A subcommand gave up on the process that owns the catalog (stopped, say): the request may
  /// still be carried out, so a script must not take it for an ordinary failure.
  static let ownerUnanswered: Int32 = 10
  static let interrupted: Int32 = 130

  /// The status for a failure; the library's categories carry their codes.
  static func code(for error: HaulError) -> Int32 {
    if error.underlying is ControlClient.Unanswered { return ownerUnanswered }
    let code = error.category.exitCode
    // Exit statuses are one byte; anything unexpected is a generic failure.
    return (1...255).contains(code) ? code : 1
  }

  /// Runs `download` to its end; its status.
  static func run(_ download: Download) async -> Int32 {
    do throws(HaulError) {
      try await download.run()
      return success
    } catch {
      return code(for: error)
    }
  }

  /// Lines for the exit-status section of `--help`.
  static let table: [(code: Int32, meaning: String)] = [
    (0, "the file is complete"),
    (1, "some other error, or a download whose state refuses it (pausing a complete one)"),
    (2, "bad command line or options"),
    (3, "a local file could not be read or written, or the reader of -o - closed the pipe"),
    (4, "network error (gave up retrying)"),
    (5, "the server's TLS certificate could not be verified"),
    (6, "the server wants credentials or refused them"),
    (7, "the server's responses were inconsistent"),
    (8, "the server answered with an error status"),
    (9, "a checksum did not match, or a finished file changed since haul made it"),
    (10, "the process that owns the catalog did not answer (it may still carry the request out)"),
    (130, "interrupted; run the same command again to resume"),
  ]
}
