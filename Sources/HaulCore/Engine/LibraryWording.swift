/// The library's words for what to do next, which the `haul` command replaces with its own
/// (`CommandWording`): a library error speaks of the library.
package enum LibraryWording {
  package static let overwriteToFetchAgain = "set `DownloadOptions.overwrite` to fetch it again"
  /// A `.file` destination that is a directory.
  package static let targetIsDirectory =
    "name a file in it (`DownloadDestination.file`), or save into it with `DownloadDestination.directory`"
  /// After `cancel(keepPartial: true)`: that `Download` is spent (its `run()` throws).
  package static let newDownloadResumes = "a new `Download` of the same URL and destination resumes from them"
  package static let runAgainToFetchAnew = "call `run()` again to fetch it anew"
  package static let newDownloadStartsOver = "a new `Download` of the same URL and destination starts over"
  package static let newURLToResume =
    "a `Download` of a fresh URL of the same file to the same destination resumes from the bytes held "
    + "(`DownloadOptions.refreshURL` asks for one by itself)"
  package static let continueOrReplaceTarget =
    "if it is a partial download of this URL (by curl or wget), set `DownloadOptions.continuePartial` to "
    + "resume it; else `DownloadOptions.overwrite` to replace it, or choose another destination"
  package static let replacePart =
    "set `DownloadOptions.overwrite` to replace it, or choose another destination"
  package static let continueOrReplacePart =
    "set `DownloadOptions.continuePartial` to resume from it (its bytes are checked against the server's), "
    + "`DownloadOptions.overwrite` to replace it, or choose another destination"
  package static let replaceLink =
    "set `DownloadOptions.overwrite` to replace the link itself (what it points to is left alone), "
    + "or choose another destination"
  package static let fetchMovedAnew =
    "set `DownloadOptions.overwrite` to download the new URL's file from the start, or choose another destination"
  package static let replaceForeignPartial =
    "set `DownloadOptions.overwrite` to replace it with the server's file, or choose another destination"
  package static let passCredentials =
    "pass credentials: `NetworkOptions.username` and `password`, `TLSOptions.clientKey` for SFTP, "
    + "or an Authorization header"
  package static let proxyLogin =
    "give the proxy's login in its URL: `NetworkOptions.proxy` = http://USER:PASSWORD@HOST:PORT "
    + "(or in $https_proxy)"
  /// A partial kept after the file turned out larger than `NetworkOptions.maxFileSize`.
  package static let resumeWithoutSizeLimit =
    "a download without `NetworkOptions.maxFileSize` (or with a larger one) resumes from them"
  /// After retries ran out; ": it resumes from …" or the reason it starts over may follow.
  package static let tryAgainLater =
    "call `run()` again later, or start a new `Download` of the same URL and destination"
  /// A download to standard output or a pipe that would have to start over.
  package static let saveToAFileToStartOver =
    "download it to a regular file (`DownloadDestination.file`) instead: a file can start over, and resume"
  package static let raiseTimeout = "raise `DownloadOptions.stallTimeout` for slow servers"
  package static let skipCertificateCheck =
    "the server's certificate could not be verified; `DownloadOptions.verifyTLS = false` skips the check (unsafe)"
  package static let skipHostKeyCheck =
    "`DownloadOptions.verifyTLS = false` skips the host key check (unsafe)"
}
