/// A transfer (one HTTP request and its response) of a download, unique within the download.
package typealias TransferID = Int

/// What one transfer asks for, and the request headers that say so.
package struct TransferPlan: Sendable, Equatable {
  package enum Target: Sendable, Equatable {
    /// From `from` to the end, the size unknown or not yet known (a round's first transfer).
    case stream(from: Int64)
    /// Segment `id` of the plan: `[start, end)` of a resource of `total` bytes.
    case segment(id: Int, start: Int64, end: Int64, total: Int64)
    /// Whether the finished file of `size` bytes is still the server's version (fetches nothing if so).
    case checkFinished(size: Int64)
  }

  package var target: Target
  /// The `Range` value, nil for a plain GET.
  package var range: String?
  /// The `If-Range` value sent with the range: the strong ETag or Last-Modified of the bytes held.
  package var ifRange: String?
  /// Bytes per read and per direct write.
  package var bufferSize: Int
  /// Held bytes asked for again before `dataStart` (no strong validator binds them): the
  /// response's first `overlap` bytes must equal them before anything after them is written.
  package var overlap: Int64 = 0
  /// Asked again without `If-Range` after a `200` that carried the held strong ETag (a server
  /// that ignores `If-Range`): only a `206` with that ETag and size may be appended.
  package var withoutIfRange = false

  package init(
    target: Target, range: String?, ifRange: String?, bufferSize: Int, overlap: Int64 = 0,
    withoutIfRange: Bool = false
  ) {
    self.target = target
    self.range = range
    self.ifRange = ifRange
    self.bufferSize = bufferSize
    self.overlap = overlap
    self.withoutIfRange = withoutIfRange
  }

  /// Where the target's new bytes begin.
  package var dataStart: Int64 {
    switch target {
    case .stream(let from): from
    case .segment(_, let start, _, _): start
    case .checkFinished(let size): size
    }
  }

  /// The first byte asked for (0 for a plain GET): `dataStart` less the overlap.
  package var offset: Int64 { dataStart - overlap }

  /// Whether a `Range` header goes out (a range from byte 0 counts).
  package var sendsRange: Bool { range != nil }

  /// The headers the engine adds after the user's.
  package var headers: [(name: String, value: String)] {
    // The whole file's digest (RFC 9530), verified before the file is given its name.
    var headers = [(name: "Want-Repr-Digest", value: "sha-256=10, sha-512=3")]
    if let range {
      headers.append((name: "Range", value: range))
      if let ifRange { headers.append((name: "If-Range", value: ifRange)) }
      // A digest of just this range lets a corrupt part be fetched again on its own.
      headers.append((name: "Want-Content-Digest", value: "sha-256=10, sha-512=3"))
    }
    return headers
  }
}

/// The facts of a response head that the machine decides on, gathered by the executor.
package struct ResponseFacts: Sendable, Equatable {
  package var summary: ResponseSummary
  /// The URL after redirects, without a password.
  package var finalURL: String
  /// The file name the response suggests: `Content-Disposition`, else the final URL's, else the request's.
  package var suggestedName: String
  /// The server's digests of the whole file, by algorithm name.
  package var wholeFileDigests: [String: String]
  package var acceptsRanges: Bool
  /// Whether the response carries a `Content-Digest` (of whatever it covers).
  package var sendsContentDigest: Bool
  /// A `206` whose own `Content-Digest` the executor can check: the bytes it covers.
  package var checkableRange: ByteRange?
  /// Bytes free on the target's file system, when the executor measured them.
  package var freeSpace: Int64?
  /// Now, as Unix seconds (for `Retry-After` dates).
  package var unixTime: Int64

  package init(
    summary: ResponseSummary, finalURL: String, suggestedName: String,
    wholeFileDigests: [String: String] = [:], acceptsRanges: Bool = false, sendsContentDigest: Bool = false,
    checkableRange: ByteRange? = nil, freeSpace: Int64? = nil, unixTime: Int64 = 0
  ) {
    self.summary = summary
    self.finalURL = finalURL
    self.suggestedName = suggestedName
    self.wholeFileDigests = wholeFileDigests
    self.acceptsRanges = acceptsRanges
    self.sendsContentDigest = sendsContentDigest
    self.checkableRange = checkableRange
    self.freeSpace = freeSpace
    self.unixTime = unixTime
  }
}

extension ResponseFacts {
  /// The name a response suggests: `Content-Disposition` (sanitized), else the final URL's
  /// last path segment where a redirect gave another name, else the name before any response
  /// (`FileNameSanitizer.directoryName`: `fallback`, the request URL's, `index.html`).
  package static func suggestedName(_ head: ResponseHead, requestURL: String, fallback: String? = nil)
    -> String
  {
    if let header = head.headers["Content-Disposition"],
      let suggested = ContentDisposition.filename(fromHeaderValue: header),
      let name = FileNameSanitizer.sanitize(suggested)
    {
      return name
    }
    // Without a redirect (the usual case) the URL's name is computed once, or not at all.
    if head.finalURL != requestURL, let final = FileNameSanitizer.name(fromURL: head.finalURL),
      final != FileNameSanitizer.name(fromURL: requestURL)
    {
      return final
    }
    return FileNameSanitizer.directoryName(forURL: requestURL, fallback: fallback)
  }
}

/// Where a download starts, as the executor found it on disk.
package enum StartPoint: Sendable, Equatable {
  /// A directory destination whose file name comes from the first response.
  case unnamed
  /// The target's files are open and hold `state` (its ranges clamped to the data file).
  case opened(ResumeState)
  /// As `opened`, but the bytes are a partial Haul did not make (`--continue`): they count only
  /// once the server's first response proves them (see `DownloadMachine.pendingProof`).
  case foreignPartial(ResumeState)
  /// A finished file from this URL: ask the server whether it is still the same version.
  case finished(ResumeState)
  /// The target is a stream (standard output, a FIFO, a device): written as it comes, from
  /// byte 0, and nothing is kept that a later run could resume from.
  case stream
}

/// What the executor does with a response head.
package enum HeadReply: Sendable, Equatable {
  /// `disposition` for the body; `checksRange`: hash the body against its `Content-Digest`.
  case decided(BodyDisposition, checksRange: Bool, [DownloadAction])
  /// Open the target under this name (a directory destination) and report `targetNamed`.
  case nameTarget(String)
}

/// Where body bytes of a transfer go.
package enum BodySlot: Sendable, Equatable {
  /// Write `count` bytes (maybe fewer than arrived) at `offset`. `hashInline`: feed the file's
  /// hasher while writing (not when the bytes await their range's digest check). `flushDue`: a
  /// checkpoint is due, so write waiting bytes now. `stopAfter`: the segment is full; stop
  /// the transfer after these bytes.
  case write(offset: Int64, count: Int, hashInline: Bool, flushDue: Bool, stopAfter: Bool)
  /// Compare `count` bytes (maybe fewer than arrived) with the held bytes at `offset` (the
  /// overlap); report `overlapChecked` at the first difference, or after the `last` ones match.
  case compare(offset: Int64, count: Int, last: Bool)
  /// The bytes are not wanted (the data was replaced, the round ends): stop the transfer.
  case stale
}

/// What the executor does, in order, after the machine's lock is released.
package enum DownloadAction: Sendable, Equatable {
  case startTransfer(TransferID, TransferPlan)
  case cancelTransfers([TransferID])
  /// Record `state` durably before anything written after this action, truncating the data
  /// file first when asked (a fresh version, a restart). Failures: `commitFailed`.
  case commit(ResumeState, truncatingTo: Int64?)
  /// Sync the data, then record `state` (every byte it claims is written); report with
  /// `checkpointDone` or `checkpointFailed`. `then`: emit this once it is durable.
  case checkpoint(ResumeState, then: DownloadEvent?)
  /// The data starts over: hash from byte 0, with the algorithms of these announced digests.
  case restartHashing(announced: [String: String]?)
  /// `[0, end)` is written and final: hash it.
  case advanceHashing(to: Int64)
  /// A response was accepted: emit `.started` for the target file.
  case announceStart(resumedFrom: Int64, totalBytes: Int64?, finalURL: String)
  case emit(DownloadEvent)
  /// Call `retryDelayOver(token)` after `after` seconds.
  case scheduleRetry(after: Double, token: Int)
  /// The download is over: finish the file, or report why not.
  case end(DownloadEnding)
}

/// How a download ended, for the executor to finish.
package enum DownloadEnding: Sendable, Equatable {
  /// Every byte is written: sync, verify, rename.
  case complete(ResumeState, DownloadSummary)
  /// The file at the target was complete already; `changed` when the server has another version,
  /// `notChecked` why its copy could not be compared (it could not be reached, or answered with
  /// an error): the file is kept as it is either way.
  case alreadyComplete(changed: Bool, notChecked: String? = nil, ResumeState)
  /// A final failure; `state` is what is held (nothing held: leave no files behind).
  case failed(HaulError, ResumeState)
  /// Stopped by `cancel`.
  case interrupted(keepPartial: Bool, ResumeState)
}

/// Facts of a finished session for its result.
package struct DownloadSummary: Sendable, Equatable {
  /// Bytes received over the network in this session.
  package var received: Int64
  /// Bytes held when the session started.
  package var resumedFrom: Int64
  package var finalURL: String
  package var bytesPerSecond: Double
}

/// A range whose complete response did not match its `Content-Digest`.
package struct RangeDigestMismatch: Sendable, Equatable {
  package let range: ByteRange
  package let algorithm: Checksum.Algorithm
  package let expected: String
  package let actual: String

  package init(range: ByteRange, algorithm: Checksum.Algorithm, expected: String, actual: String) {
    self.range = range
    self.algorithm = algorithm
    self.expected = expected
    self.actual = actual
  }

  package func error(again: Bool) -> HaulError {
    let bytes = "bytes \(range.start)–\(range.end - 1)"
    guard again else {
      return HaulError(.integrity, "\(bytes) did not match the server's \(algorithm.rawValue) Content-Digest")
    }
    return HaulError(
      .integrity,
      "\(bytes) failed the server's Content-Digest twice (\(algorithm.rawValue) is \(expected), "
        + "the bytes received have \(actual))",
      hint: "the server or something on the way delivers corrupt data; the verified bytes are kept: "
        + LibraryWording.tryAgainLater + ": it resumes from them")
  }
}
