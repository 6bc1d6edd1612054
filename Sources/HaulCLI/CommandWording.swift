import Haul

/// The command's words for what the library suggests. Library errors speak of the library
/// ("call `run()` again", "set `DownloadOptions.overwrite`"); the command says the same in
/// terms of its own: the same command, its flags, and a way to choose another name that fits
/// how the file was named (no "-o" when `-o` named it already, or where `-o` is refused).
///
///     let shown = CommandWording(naming: options.output != nil ? .output : .directory).translate(error)
struct CommandWording: Sendable, Equatable {
  /// How the download's file was named.
  enum Naming: Sendable, Equatable {
    /// One download into a directory (`-d`, or the current one), named by the server or the
    /// URL: `-o` chooses another name.
    case directory
    /// `-o FILE` named it.
    case output
    /// One download of several (`haul URL URL…`, `-i FILE`), where `-o` is refused: an input
    /// file's `out=NAME` names one.
    case batch
  }

  /// How the file was named; nil when not known (a catalog's or a fleet's download): the
  /// hints then say "-o", as for a command line.
  var naming: Naming?
  /// A download of the manager's catalog (`haul run`, `haul ls --json`): the remedies are
  /// its subcommands, not the same command again.
  var download: DownloadID?
  /// A job of a shared queue (`haul ls --queue`): a failed one is queued again with
  /// `haul queue retry`.
  var queueJob: String?

  /// The words for a job of a shared queue.
  static func queue(_ job: String) -> CommandWording { CommandWording(queueJob: job) }

  private static func queueReplacements(_ job: String) -> [(library: String, command: String)] {
    let retry = "haul queue retry \(job.prefix(8))"
    return [
      (LibraryWording.tryAgainLater, "\(retry) queues it again"),
      (LibraryWording.newDownloadResumes, "\(retry) queues it again: it continues from its bytes"),
      (LibraryWording.runAgainToFetchAnew, "\(retry) queues it again to fetch it anew"),
      (LibraryWording.newDownloadStartsOver, "\(retry) queues it again, starting over"),
    ]
  }

  /// The words for a download of the catalog: it has no options to change, so a file to
  /// replace needs it added anew with --overwrite; a failed one is queued again with resume.
  static func manager(_ id: DownloadID) -> CommandWording { CommandWording(download: id) }

  private static func managerReplacements(_ id: DownloadID) -> [(library: String, command: String)] {
    [
      (
        LibraryWording.overwriteToFetchAgain,
        "remove it (haul rm \(id)) and add it again with --overwrite to fetch it again"
      ),
      (LibraryWording.newDownloadResumes, "haul resume \(id) queues it again: it continues from its bytes"),
      (LibraryWording.runAgainToFetchAnew, "haul resume \(id) queues it again to fetch it anew"),
      (LibraryWording.newDownloadStartsOver, "haul resume \(id) queues it again, starting over"),
      (LibraryWording.tryAgainLater, "haul resume \(id) queues it again"),
    ]
  }

  /// Words below that suit `-o`, which `namingReplacements` fits to how the file was named.
  private static let otherName = ", or -o to choose another name"
  private static let directoryTarget = "name a file in it with -o, or save into it with -d instead of -o"
  private static let toAFile = "download it to a file instead (-o FILE): a file can start over, and resume"
  private static let freshURL =
    "run haul again with a fresh URL of the same file and the same -o: it resumes from the bytes held "
    + "(--refresh-url-command asks for one by itself)"

  static let replacements: [(library: String, command: String)] = [
    (LibraryWording.overwriteToFetchAgain, "use --overwrite to fetch it again"),
    (LibraryWording.targetIsDirectory, directoryTarget),
    (
      LibraryWording.continueOrReplaceTarget,
      "if it is a partial download of this URL (by curl or wget), use --continue to resume it; "
        + "else --overwrite to replace it, or -o to choose another name"
    ),
    (LibraryWording.replacePart, "use --overwrite to replace it, or -o to choose another name"),
    (
      LibraryWording.continueOrReplacePart,
      "use --continue to resume from it (its bytes are checked against the server's), "
        + "--overwrite to replace it, or -o to choose another name"
    ),
    (
      LibraryWording.replaceLink,
      "use --overwrite to replace the link itself (what it points to is left alone), or -o to choose another name"
    ),
    (
      LibraryWording.fetchMovedAnew,
      "use --overwrite to download the new URL's file from the start, or -o to choose another name"
    ),
    (
      LibraryWording.replaceForeignPartial,
      "use --overwrite to replace it with the server's file, or -o to choose another name"
    ),
    (
      LibraryWording.passCredentials,
      "pass credentials: -u USER:PASSWORD, --key FILE for SFTP, or -H 'Authorization: Bearer TOKEN'"
    ),
    (
      LibraryWording.proxyLogin,
      "give the proxy's login in its URL: --proxy http://USER:PASSWORD@HOST:PORT (or in $https_proxy)"
    ),
    (LibraryWording.raiseTimeout, "raise --timeout for slow servers"),
    (
      LibraryWording.skipCertificateCheck,
      "the server's certificate could not be verified; --insecure skips the check (unsafe)"
    ),
    (LibraryWording.skipHostKeyCheck, "--insecure skips the host key check (unsafe)"),
    (LibraryWording.newDownloadResumes, "run the same command again to resume"),
    (LibraryWording.runAgainToFetchAnew, "run the same command again to fetch it anew"),
    (LibraryWording.newDownloadStartsOver, "running the same command again starts over"),
    (LibraryWording.newURLToResume, freshURL),
    (LibraryWording.tryAgainLater, "run the same command again later"),
    (LibraryWording.saveToAFileToStartOver, toAFile),
    (
      LibraryWording.resumeWithoutSizeLimit,
      "running the same command without --max-filesize (or with a larger one) resumes from them"
    ),
  ]

  /// The words of `replacements` that assume `-o` may name the file (or named it), and what
  /// they become for each naming.
  private static func namingReplacements(_ naming: Naming) -> [(command: String, fitting: String)] {
    let resumes = ": it resumes from the bytes held (--refresh-url-command asks for one by itself)"
    let inputFile = "out=NAME in an input file (-i)"
    switch naming {
    case .output:
      return [(otherName, ", or choose another file name")]
    case .directory:
      return [
        (directoryTarget, "remove or rename that directory, or choose another name with -o"),
        (
          freshURL,
          "run haul again with a fresh URL of the same file (and -o NAME if its name differs)" + resumes
        ),
      ]
    case .batch:
      return [
        (directoryTarget, "remove or rename that directory, or choose another name with \(inputFile)"),
        (otherName, ", or \(inputFile) to choose another name"),
        (toAFile, "download it to a file instead: a file can start over, and resume"),
        (
          freshURL,
          "run haul again with a fresh URL of the same file (and \(inputFile) if its name differs)" + resumes
        ),
      ]
    }
  }

  func translate(_ text: String) -> String {
    var text = text
    if let download {
      for (library, command) in Self.managerReplacements(download) {
        text = text.replacing(library, with: command)
      }
    }
    if let queueJob {
      for (library, command) in Self.queueReplacements(queueJob) {
        text = text.replacing(library, with: command)
      }
    }
    for (library, command) in Self.replacements { text = text.replacing(library, with: command) }
    if let naming {
      for (command, fitting) in Self.namingReplacements(naming) {
        text = text.replacing(command, with: fitting)
      }
    }
    return text
  }

  func translate(_ error: HaulError) -> HaulError {
    HaulError(
      error.category, translate(error.message), hint: error.hint.map(translate), underlying: error.underlying)
  }

  /// The event with a failure's words translated; every other event as it is.
  func translate(_ event: DownloadEvent) -> DownloadEvent {
    if case .failed(let error) = event { return .failed(translate(error)) }
    return event
  }
}
