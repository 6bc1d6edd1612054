import Haul
import Testing

@testable import HaulCLI

/// The library's hints in the command's words.
@Suite struct CommandWordingTests {
  @Test(
    arguments: [
      (LibraryWording.newDownloadResumes, nil, "run the same command again to resume"),
      (
        "it was left as it is; " + LibraryWording.overwriteToFetchAgain, nil,
        "it was left as it is; use --overwrite to fetch it again"
      ),
      (
        "the corrupt download was discarded; " + LibraryWording.runAgainToFetchAnew, nil,
        "the corrupt download was discarded; run the same command again to fetch it anew"
      ),
      (
        "stopped; " + LibraryWording.newDownloadStartsOver, nil,
        "stopped; running the same command again starts over"
      ),
      // No "-o to choose another name" when -o named the file.
      (
        "use --overwrite to replace it, or -o to choose another name", .directory,
        "use --overwrite to replace it, or -o to choose another name"
      ),
      (
        "use --overwrite to replace it, or -o to choose another name", .output,
        "use --overwrite to replace it, or choose another file name"
      ),
      ("nothing to translate", .output, "nothing to translate"),
      (LibraryWording.raiseTimeout, nil, "raise --timeout for slow servers"),
      (
        LibraryWording.fetchMovedAnew, .output,
        "use --overwrite to download the new URL's file from the start, or choose another file name"
      ),
      (
        LibraryWording.targetIsDirectory, .output,
        "name a file in it with -o, or save into it with -d instead of -o"
      ),
      // Without -o, the directory is where the server's or the URL's name led: -o names another.
      (
        LibraryWording.targetIsDirectory, .directory,
        "remove or rename that directory, or choose another name with -o"
      ),
      // Several URLs refuse -o: an input file's out=NAME names one.
      (
        LibraryWording.targetIsDirectory, .batch,
        "remove or rename that directory, or choose another name with out=NAME in an input file (-i)"
      ),
      (
        LibraryWording.replacePart, .batch,
        "use --overwrite to replace it, or out=NAME in an input file (-i) to choose another name"
      ),
      (
        LibraryWording.newURLToResume, .output,
        "run haul again with a fresh URL of the same file and the same -o: it resumes from the bytes held "
          + "(--refresh-url-command asks for one by itself)"
      ),
      (
        LibraryWording.newURLToResume, .batch,
        "run haul again with a fresh URL of the same file (and out=NAME in an input file (-i) if its name "
          + "differs): it resumes from the bytes held (--refresh-url-command asks for one by itself)"
      ),
    ] as [(String, CommandWording.Naming?, String)])
  func translates(library: String, naming: CommandWording.Naming?, command: String) {
    #expect(CommandWording(naming: naming).translate(library) == command)
  }

  /// No hint for a download of several URLs suggests -o, which they refuse; none for a
  /// download that -o named suggests -o to choose a name.
  @Test(arguments: allLibraryHints)
  func hintsFitHowTheFileWasNamed(hint: String) {
    let batch = CommandWording(naming: .batch).translate(hint)
    #expect(batch.firstMatch(of: /(^|[^-a-z])-o\b/) == nil, "\(batch)")
    let named = CommandWording(naming: .output).translate(hint)
    #expect(!named.contains("-o to choose"), "\(named)")
    let directory = CommandWording(naming: .directory).translate(hint)
    #expect(!directory.contains("instead of -o") && !directory.contains("the same -o"), "\(directory)")
  }

  static let allLibraryHints = [
    LibraryWording.overwriteToFetchAgain, LibraryWording.targetIsDirectory, LibraryWording.newDownloadResumes,
    LibraryWording.runAgainToFetchAnew, LibraryWording.newDownloadStartsOver, LibraryWording.newURLToResume,
    LibraryWording.continueOrReplaceTarget, LibraryWording.replacePart, LibraryWording.continueOrReplacePart,
    LibraryWording.replaceLink, LibraryWording.fetchMovedAnew, LibraryWording.replaceForeignPartial,
    LibraryWording.passCredentials, LibraryWording.proxyLogin, LibraryWording.raiseTimeout,
    LibraryWording.skipCertificateCheck, LibraryWording.skipHostKeyCheck,
    LibraryWording.saveToAFileToStartOver,
    LibraryWording.resumeWithoutSizeLimit, LibraryWording.tryAgainLater,
  ]

  /// Every library hint has the command's words: none names a library type to the user.
  @Test(arguments: allLibraryHints)
  func everyLibraryHintIsTranslated(hint: String) {
    let shown = CommandWording().translate(hint)
    #expect(shown != hint)
    #expect(!shown.contains("`"), "\(shown)")
    #expect(!shown.contains("Options"), "\(shown)")
  }

  @Test func aManagerDownloadGetsTheManagersRemedies() throws {
    let id = try #require(DownloadID("0123456789abcdef"))
    let wording = CommandWording.manager(id)
    #expect(
      wording.translate("it was left as it is; " + LibraryWording.overwriteToFetchAgain)
        == "it was left as it is; remove it (haul rm 0123456789abcdef) and add it again with --overwrite to fetch it again"
    )
    #expect(wording.translate(LibraryWording.newDownloadResumes).hasPrefix("haul resume 0123456789abcdef"))
    #expect(wording.translate("nothing to translate") == "nothing to translate")
  }

  /// A failed job of a shared queue is queued again with haul queue retry, not by running a
  /// command again.
  @Test func aQueueJobGetsTheQueuesRemedy() {
    let wording = CommandWording.queue("0123456789abcdef0123")
    #expect(
      wording.translate(LibraryWording.tryAgainLater + ": it resumes from 1.00 MiB")
        == "haul queue retry 01234567 queues it again: it resumes from 1.00 MiB")
  }

  @Test func translatesAFailureAndLeavesTheRestAlone() {
    let error = HaulError(.interrupted, "stopped; 1 MiB saved", hint: LibraryWording.newDownloadResumes)
    let shown = CommandWording().translate(error)
    #expect(shown.category == .interrupted && shown.message == error.message)
    #expect(shown.hint == "run the same command again to resume")
    guard case .failed(let failure) = CommandWording().translate(.failed(error)) else {
      Issue.record("not a failure")
      return
    }
    #expect(failure == shown)
    guard case .restarted(let reason) = CommandWording().translate(.restarted(reason: "changed")) else {
      Issue.record("not a restart")
      return
    }
    #expect(reason == "changed")
  }
}
