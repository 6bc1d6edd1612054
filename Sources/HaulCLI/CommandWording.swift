import Haul

/// The command's words for what the library suggests. Library errors speak of the library
/// ("call `run()` again", "set `DownloadOptions.overwrite`"); the command says the same in
/// terms of its own: the same command, its flags, and no "-o to choose another name" when `-o`
/// named the file already.
///
///     let shown = CommandWording(outputGiven: options.output != nil).translate(error)
struct CommandWording: Sendable, Equatable {
  /// Whether `-o` named the file.
  var outputGiven = false
  /// A download of the manager's catalog (`haul run`, `haul ls --json`): the remedies are
  /// its subcommands, not the same command again.
  var download: DownloadID?

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
    ]
  }

  static let replacements: [(library: String, command: String)] = [
    (LibraryWording.overwriteToFetchAgain, "use --overwrite to fetch it again"),
    (LibraryWording.targetIsDirectory, "name a file in it with -o, or save into it with -d instead of -o"),
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
    (
      LibraryWording.newURLToResume,
      "run haul again with a fresh URL of the same file and the same -o: it resumes from the bytes held "
        + "(--refresh-url-command asks for one by itself)"
    ),
  ]

  func translate(_ text: String) -> String {
    var text = text
    if let download {
      for (library, command) in Self.managerReplacements(download) {
        text = text.replacing(library, with: command)
      }
    }
    for (library, command) in Self.replacements { text = text.replacing(library, with: command) }
    if outputGiven {
      text = text.replacing(", or -o to choose another name", with: ", or choose another file name")
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
