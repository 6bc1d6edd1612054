/// Fresh start, resume, or refusal: what a download does with the files it finds at its
/// target before any request. Pure; the executor gathers the facts (and takes the `.part`
/// file's lock between the two steps, so no other process changes the state meanwhile).
package enum StartDecision {
  /// Before opening the `.part` file.
  package enum BeforeOpening: Sendable, Equatable {
    /// A finished file from this URL and no partial: ask the server whether it changed.
    case checkFinished(ResumeState)
    /// Open (and lock) the `.part` file; `discardFinished`: a finished file is to be replaced.
    case openPart
    /// `continuePartial`: the file at the target is someone else's partial (curl's, wget's);
    /// it becomes the `.part` file and the download continues it.
    case adoptTarget
    case refuse(HaulError)
  }

  /// - Parameters:
  ///   - finished: the finished-file record on the target, when it names this URL.
  ///   - targetExists: something is at the target's path.
  ///   - partExists: the `.part` file exists.
  ///   - continuePartial: the user asked to continue a partial Haul did not make (`--continue`).
  package static func beforeOpening(
    target: String, finished: ResumeState?, targetExists: Bool, partExists: Bool, overwrite: Bool,
    continuePartial: Bool = false
  ) -> BeforeOpening {
    if let finished, !partExists, !overwrite { return .checkFinished(finished) }
    if targetExists, finished == nil, !overwrite {
      guard continuePartial else {
        return .refuse(
          HaulError(
            .fileSystem, "\(target) already exists and was not downloaded by haul from this URL",
            hint: LibraryWording.continueOrReplaceTarget, underlying: TargetExists()))
      }
      guard !partExists else {
        return .refuse(
          HaulError(
            .fileSystem, "both \(target) and its .part file exist: haul cannot tell which to continue",
            hint: "remove the one that is not the partial download, then run again"))
      }
      return .adoptTarget
    }
    return .openPart
  }

  /// What the state file said.
  package enum SavedState: Sendable, Equatable {
    case none
    case loaded(ResumeState)
    /// Unreadable: corrupt, truncated, or another format version.
    case unreadable
  }

  /// After opening the `.part` file.
  package enum AfterOpening: Sendable, Equatable {
    /// Continue from `state` (ranges clamped to the bytes the `.part` file really holds).
    /// `truncate`: the data file holds bytes no state claims; empty it. `replaceState`: the
    /// state file is not this download's; record `state` (empty) over it first. `notice`: say why.
    case resume(ResumeState, truncate: Bool, replaceState: Bool, notice: String?)
    case refuse(HaulError)
  }

  /// - Parameter partOwner: the URL the `.part` file's own mark names (a download that had not
  ///   reached its first checkpoint writes no state file).
  ///   `continuePartial`: a `.part` without its state is continued from its size (the first
  ///   request then proves the bytes are the server's: by `If-Range` nothing, so by the overlap).
  package static func afterOpening(
    url: String, part: String, partExisted: Bool, partSize: Int64, saved: SavedState,
    partOwner: String? = nil,
    overwrite: Bool, continuePartial: Bool = false
  ) -> AfterOpening {
    let empty = ResumeState(url: url)
    switch saved {
    case .loaded(let state) where state.url == url:
      var state = state
      // Never trust more than the data file really holds (data lost after the last sync, or edited).
      state.ranges = ByteRanges.normalized(
        state.ranges.map { ByteRange(start: $0.start, end: min($0.end, partSize)) })
      return .resume(state, truncate: state.ranges.isEmpty && partSize > 0, replaceState: false, notice: nil)
    case .loaded(let state):
      guard overwrite else {
        // Another URL (a moved or re-signed link): the machine resumes only once the new URL's
        // first response proves it serves the same file (`DownloadMachine.pendingProof`).
        var state = state
        state.ranges = ByteRanges.normalized(
          state.ranges.map { ByteRange(start: $0.start, end: min($0.end, partSize)) })
        return .resume(
          state, truncate: state.ranges.isEmpty && partSize > 0, replaceState: false, notice: nil)
      }
      return .resume(empty, truncate: true, replaceState: true, notice: nil)
    case .unreadable:
      return .resume(empty, truncate: true, replaceState: true, notice: "the saved state was unreadable")
    case .none:
      if let partOwner, partOwner != url, partSize > 0, !overwrite {
        return .refuse(
          HaulError(
            .fileSystem, "\(part) belongs to another download (\(partOwner))",
            hint: LibraryWording.replacePart))
      }
      if partExisted, partSize > 0, partOwner == nil || partOwner == url, continuePartial, !overwrite {
        // No validator is known: the first request repeats the tail and compares it.
        return .resume(
          ResumeState(url: url, ranges: [ByteRange(start: 0, end: partSize)]), truncate: false,
          replaceState: false, notice: nil)
      }
      if partExisted, partSize > 0, partOwner == nil, !overwrite {
        return .refuse(
          HaulError(
            .fileSystem, "\(part) exists but was not made by haul (or its state file was removed)",
            hint: LibraryWording.continueOrReplacePart))
      }
      return .resume(empty, truncate: partSize > 0, replaceState: false, notice: nil)
    }
  }
}

/// The cause of a failure that left a partial Haul did not make as it was (`--continue`): its
/// bytes were never proven to be this URL's. The executor then gives the file back its name
/// and records no state, so a rerun does not treat those bytes as Haul's.
package struct UnprovenPartial: Error, Sendable, Equatable {
  package init() {}
}

/// The cause of a refusal because a file Haul did not make from this URL is at the target:
/// it is left as it was (aria2's "file already exists").
package struct TargetExists: Error, Sendable, Equatable {
  package init() {}
}

/// The cause of a failure because another download (in this process or another) holds the
/// target's `.part` locked: nothing was touched, and a later attempt may succeed.
package struct TargetInUse: Error, Sendable, Equatable {
  /// By a download of this same process.
  package let here: Bool

  package init(here: Bool) { self.here = here }
}
