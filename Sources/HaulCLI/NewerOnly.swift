import FoundationEssentials
import Haul

/// `-N`/`--newer-only`, as wget's `-N` and curl's `-z FILE`: a finished local file is kept unless
/// the server's copy changed after the file's modification time; a newer copy replaces it.
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
    do throws(HaulError) {
      if try await ServerCopy.isNewer(options.url, than: modified, options: options.downloadOptions) {
        return .download(replacing: true)
      }
    } catch {
      return .kept(HaulCommand.setupFailure(error, json: options.json, sink: sink))
    }
    if !options.quiet, !options.json {
      sink.stderr("haul: \(ProgressLine.sanitize(path)): not newer on the server, kept\n")
    }
    return .kept(ExitStatus.success)
  }
}
