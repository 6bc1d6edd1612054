import FoundationEssentials
import Haul

/// `-N`/`--newer-only`, as wget's `-N` and curl's `-z FILE`: a finished local file is kept unless
/// the server's copy changed after the file's modification time; a newer copy replaces it. A
/// server that gives no modification time cannot say: the file is kept (exit 3) unless haul
/// made it from this URL.
enum NewerOnly {
  enum Decision: Equatable {
    /// No local file (or not a regular one), or the server's copy is newer: download, replacing it.
    case download(replacing: Bool)
    /// The server's copy is not newer: the exit status after saying so.
    case kept(Int32)
  }

  /// Asks the server about the file `options` would write (`-o FILE`, or the URL's name in the
  /// directory; a server-suggested name is not known before the download).
  static func decide(_ options: CommandLineOptions, sink: OutputSink) async -> Decision {
    guard
      let name = NameCollisions.expectedName(
        source: options.url, destination: HaulCommand.destination(for: options))
    else { return .download(replacing: false) }
    let path = options.output ?? ((options.directory ?? ".") + "/" + name)
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
      attributes[.type] as? FileAttributeType == .typeRegular,
      let modified = attributes[.modificationDate] as? Date
    else { return .download(replacing: false) }
    let comparison: ServerCopy.Comparison
    do throws(HaulError) {
      comparison = try await ServerCopy.compare(options.url, with: modified, options: options.downloadOptions)
    } catch {
      return .kept(HaulCommand.setupFailure(error, json: options.json, sink: sink))
    }
    switch comparison {
    case .newer:
      return .download(replacing: true)
    case .notNewer:
      if !options.quiet, !options.json {
        sink.stderr("haul: \(ProgressLine.sanitize(path)): not newer on the server, kept\n")
      }
      return .kept(ExitStatus.success)
    case .unknown:
      return undecided(path: path, options: options, sink: sink)
    }
  }

  /// The server gives no modification time. A file haul finished from this URL goes to the
  /// library, which never replaces it without --overwrite (it checks the server's validators);
  /// any other file is kept, as haul without -N keeps it, with exit status 3 as haul gives a
  /// file it may not replace: -N did not run, and a script must not take the old file for new.
  static func undecided(path: String, options: CommandLineOptions, sink: OutputSink) -> Decision {
    if options.overwrite { return .download(replacing: true) }
    if ServerCopy.isFinishedDownload(at: path, of: options.url) { return .download(replacing: false) }
    let shown = ProgressLine.sanitize(path)
    let error = HaulError(
      .fileSystem,
      "the server gives no modification time, so -N cannot compare; kept \(shown)",
      hint: "use --overwrite to replace it")
    return .kept(HaulCommand.setupFailure(error, json: options.json, sink: sink))
  }
}
