import FoundationEssentials
import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `haul pause ID…|--all`, `haul resume ID…|--all`, `haul rm [--delete-files] ID…`: ids in full
/// or as unique prefixes (at least 4 digits); every id is checked before anything changes, and
/// the change is one transaction (a wrong id, or pausing a finished download, changes nothing).
enum ChangeCommand {
  enum Verb: String, Sendable {
    case pause, resume, remove = "rm"

    var past: String {
      switch self {
      case .pause: "paused"
      case .resume: "resumed"
      case .remove: "removed"
      }
    }
  }

  static let pause = subcommand(
    .pause,
    summary: """
      Pauses downloads: a running one stops with every byte it received kept, and a paused one
      stays paused across runs until resumed. --all pauses every queued and running download.
      """)

  static let resume = subcommand(
    .resume,
    summary: """
      Queues paused, failed or cancelled downloads again; they continue from the bytes they hold
      when haul run, haul ui or the daemon runs them (at once if one of them has the catalog
      open). --all resumes every paused or failed download.
      """)

  static let remove = ManagerCommand.Subcommand(
    name: "rm", arguments: "[--delete-files] ID…",
    summary: """
      Takes downloads off the catalog, stopping those that run. Their files stay unless
      --delete-files, which deletes the .part and state files, and a finished file that is still
      the one haul made.
      """,
    specs: ManagerCommand.table(["quiet", "help"]) + [
      ManagerCommand.flag("delete-files", "delete their partial files too (and finished ones haul made)"),
      ManagerCommand.catalogOption, ManagerCommand.queueOption,
    ],
    run: { arguments, context in await run(.remove, arguments, context) })

  private static func subcommand(_ verb: Verb, summary: String) -> ManagerCommand.Subcommand {
    ManagerCommand.Subcommand(
      name: verb.rawValue, arguments: "ID…|--all", summary: summary,
      specs: ManagerCommand.table(["quiet", "help"]) + [
        ManagerCommand.flag("all", "every download it applies to"),
        ManagerCommand.catalogOption, ManagerCommand.queueOption,
      ],
      run: { arguments, context in await run(verb, arguments, context) })
  }

  static func run(
    _ verb: Verb, _ arguments: ManagerCommand.ParsedArguments, _ context: ManagerCommand.Context
  )
    async -> Int32
  {
    let sink = context.sink
    let all = arguments.flag("all")
    let given = arguments.positionals
    if all, !given.isEmpty {
      return ManagerCommand.usageError(verb.rawValue, "give ids or --all, not both", sink: sink)
    }
    if !all, given.isEmpty {
      let what =
        verb == .remove ? "which downloads? Give their ids" : "which downloads? Give their ids or --all"
      return ManagerCommand.usageError(verb.rawValue, what, sink: sink)
    }
    let deleteFiles = arguments.flag("delete-files")
    let quiet = arguments.options.quiet
    if let queue = ManagerCommand.queue(arguments, context) {
      if deleteFiles {
        return ManagerCommand.usageError(
          "rm",
          "--delete-files works on a catalog: a fleet's files are on its workers (a worker holding a job "
            + "deletes its partial file when it is removed)", sink: sink)
      }
      return await QueueCommands.change(verb, ids: all ? nil : given, queue: queue, quiet: quiet, sink: sink)
    }
    let access: CatalogAccess
    do throws(HaulError) {
      let location = try ManagerCommand.location(arguments, context)
      try location.requireExisting()
      access = try await CatalogAccess.open(location, creating: false)
    } catch {
      return ManagerCommand.failure(error, verb.rawValue, sink: sink)
    }
    let resolved: (ids: [DownloadID], downloads: [DownloadID: DownloadSnapshot])?
    do throws(HaulError) {
      resolved = all ? nil : try access.resolve(given)
    } catch {
      // An id that names no download is a bad argument: a usage error (2).
      await access.close()
      return ManagerCommand.failure(error, verb.rawValue, sink: sink)
    }
    let ids = resolved?.ids
    let downloads = resolved?.downloads ?? [:]
    do throws(HaulError) {
      do throws(HaulError) {
        switch verb {
        case .pause: try await access.pause(ids)
        case .resume: try await access.resume(ids)
        case .remove: try await access.remove(ids ?? [], deletingFiles: deleteFiles)
        }
      } catch {
        throw Self.stateConflict(error, among: ids?.count ?? 0, verb: verb)
      }
      await access.close()
      if !quiet {
        if let ids {
          sink.stderr(
            ids.map { id in
              let download = downloads[id]
              let kept = deleteFiles ? download.flatMap(keptFile) : nil
              return "haul: \(verb.past) \(id)" + (download.map { " (\(ListTable.name(of: $0)))" } ?? "")
                + (kept.map { "; " + $0 } ?? "") + "\n"
            }.joined())
        } else {
          sink.stderr("haul: \(verb.past) every download it applies to\n")
        }
      }
      return ExitStatus.success
    } catch {
      await access.close()
      return ManagerCommand.failure(error, verb.rawValue, sink: sink)
    }
  }

  /// What `rm --delete-files` left of a download, and why: a file still at its name is one haul
  /// did not make (changed after it finished, or never haul's), so it is the user's to delete.
  static func keptFile(of download: DownloadSnapshot) -> String? {
    guard let path = download.file?.path else { return nil }
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    let shown = ProgressLine.sanitize(path)
    if download.finishedAt != nil, let total = download.totalBytes, info.st_mode & S_IFMT == S_IFREG,
      Int64(info.st_size) != total
    {
      return "kept \(shown): it changed after haul finished it (\(info.st_size) bytes, finished with "
        + "\(total)), and --delete-files deletes only what haul made; delete it yourself if you want it gone"
    }
    return "kept \(shown): it is not the file haul made, and --delete-files deletes only what haul made; "
      + "delete it yourself if you want it gone"
  }

  /// The manager refuses a download in the wrong state (pausing a complete one, resuming a
  /// complete one whose file is there) as `.invalidInput`, but the command line was right: it
  /// is the download's state that conflicts, so it exits 1 (some other error), as another haul
  /// holding the same file does, and without "Try 'haul pause --help'". The ids are resolved
  /// by then, so every `.invalidInput` here is such a refusal.
  /// With several ids, it says that none of them changed: the change is one transaction.
  static func stateConflict(_ error: HaulError, among count: Int = 1, verb: Verb = .pause) -> HaulError {
    guard error.category == .invalidInput else { return error }
    guard count > 1 else { return HaulError(.generic, error.message, hint: error.hint, underlying: error) }
    let lines =
      [error.message] + (error.hint.map { [$0] } ?? []) + [
        "nothing was \(verb.past): haul \(verb.rawValue) changes all the downloads given or none; "
          + "give the others without it"
      ]
    return HaulError(.generic, lines.joined(separator: "\n"), underlying: error)
  }
}
