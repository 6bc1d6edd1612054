import Haul
import Testing

@testable import HaulCLI

/// The library's hints in the command's words.
@Suite struct CommandWordingTests {
  @Test(arguments: [
    (LibraryWording.newDownloadResumes, false, "run the same command again to resume"),
    (
      "it was left as it is; " + LibraryWording.overwriteToFetchAgain, false,
      "it was left as it is; use --overwrite to fetch it again"
    ),
    (
      "the corrupt download was discarded; " + LibraryWording.runAgainToFetchAnew, false,
      "the corrupt download was discarded; run the same command again to fetch it anew"
    ),
    (
      "stopped; " + LibraryWording.newDownloadStartsOver, false,
      "stopped; running the same command again starts over"
    ),
    // No "-o to choose another name" when -o named the file.
    (
      "use --overwrite to replace it, or -o to choose another name", false,
      "use --overwrite to replace it, or -o to choose another name"
    ),
    (
      "use --overwrite to replace it, or -o to choose another name", true,
      "use --overwrite to replace it, or choose another file name"
    ),
    ("nothing to translate", true, "nothing to translate"),
    (LibraryWording.raiseTimeout, false, "raise --timeout for slow servers"),
    (
      LibraryWording.fetchMovedAnew, true,
      "use --overwrite to download the new URL's file from the start, or choose another file name"
    ),
    (
      LibraryWording.targetIsDirectory, true,
      "name a file in it with -o, or save into it with -d instead of -o"
    ),
  ])
  func translates(library: String, outputGiven: Bool, command: String) {
    #expect(CommandWording(outputGiven: outputGiven).translate(library) == command)
  }

  /// Every library hint has the command's words: none names a library type to the user.
  @Test(arguments: [
    LibraryWording.overwriteToFetchAgain, LibraryWording.targetIsDirectory, LibraryWording.newDownloadResumes,
    LibraryWording.runAgainToFetchAnew, LibraryWording.newDownloadStartsOver, LibraryWording.newURLToResume,
    LibraryWording.continueOrReplaceTarget, LibraryWording.replacePart, LibraryWording.continueOrReplacePart,
    LibraryWording.replaceLink, LibraryWording.fetchMovedAnew, LibraryWording.replaceForeignPartial,
    LibraryWording.passCredentials, LibraryWording.proxyLogin, LibraryWording.raiseTimeout,
    LibraryWording.skipCertificateCheck, LibraryWording.skipHostKeyCheck,
  ])
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
