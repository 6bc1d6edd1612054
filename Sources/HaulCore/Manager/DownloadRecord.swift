import FoundationEssentials

/// One download as a catalog keeps it. Never holds a secret: `url` has no password and
/// secret header values are left out of `options` (`secrets` says what is missing).
package struct DownloadRecord: Sendable, Equatable {
  package var id: DownloadID
  /// The URL as given, normalised, without the password of its userinfo.
  package var url: String
  package var destination: DownloadDestination
  /// The target file once known (at once for `.file`, from the first response for `.directory`).
  package var file: String?
  /// Shared by every record decoded from the same text (most downloads share their options),
  /// so that 10,000 records do not hold 10,000 copies.
  package var options: StoredOptions {
    get { sharedOptions.value }
    set { sharedOptions = Shared(newValue) }
  }
  private var sharedOptions: Shared<StoredOptions>
  /// What the catalog left out and only memory holds.
  package var secrets: SecretParts
  package var state: DownloadState
  /// Queue order: lower starts first. Sparse, so that a move rewrites one row.
  package var position: Int64
  /// Bytes held and the full size, as last recorded (for listing; the state file is the truth).
  package var bytes: Int64
  package var totalBytes: Int64?
  /// Why it failed, or why it waits.
  package var error: StoredError?
  package var sha256: String?
  package var finalURL: String?
  /// Seconds since 1970.
  package var addedAt: Double
  package var finishedAt: Double?

  package init(
    id: DownloadID, url: String, destination: DownloadDestination, options: StoredOptions,
    secrets: SecretParts = [], state: DownloadState = .queued, position: Int64 = 0, addedAt: Double = 0
  ) {
    self.id = id
    self.url = url
    self.destination = destination
    self.file = if case .file(let file) = destination { file.path } else { nil }
    self.sharedOptions = Shared(options)
    self.secrets = secrets
    self.state = state
    self.position = position
    self.bytes = 0
    self.addedAt = addedAt
  }
}

/// An immutable value behind a reference: copies of what holds it share one.
package final class Shared<Value: Sendable & Equatable>: Sendable, Equatable {
  package let value: Value
  package init(_ value: Value) { self.value = value }
  package static func == (a: Shared, b: Shared) -> Bool { a === b || a.value == b.value }
}

/// The secret parts of a download that a catalog never stores.
package struct SecretParts: OptionSet, Sendable, Hashable {
  package let rawValue: Int
  package init(rawValue: Int) { self.rawValue = rawValue }

  /// The URL's userinfo had a password.
  package static let urlPassword = SecretParts(rawValue: 1)
  /// Some header values (Authorization, Proxy-Authorization, Cookie).
  package static let headers = SecretParts(rawValue: 2)
  /// `network.password` (`-u USER:PASSWORD`'s).
  package static let password = SecretParts(rawValue: 4)
  /// `network.cookies` (`-b 'NAME=VALUE'`).
  package static let cookies = SecretParts(rawValue: 8)

  /// The parts that live in a download's options (a change of options replaces them).
  package static let inOptions: SecretParts = [.headers, .password, .cookies]

  /// The secret parts of `options` that `StoredOptions` leaves out or never encodes, given the
  /// header values `StoredOptions.split` took out of them.
  package static func of(_ options: DownloadOptions, secretHeaders: [Int: String]) -> SecretParts {
    var parts: SecretParts = []
    if !secretHeaders.isEmpty { parts.insert(.headers) }
    if options.network.password != nil { parts.insert(.password) }
    if options.network.cookies != nil { parts.insert(.cookies) }
    return parts
  }
}

/// A `HaulError` as a catalog stores it: category, message and hint. The cause is kept in
/// memory only (what the daemon's aria2 error codes are told by); one read back from a
/// catalog has none.
package struct StoredError: Sendable, Equatable {
  package var category: Int32
  package var message: String
  package var hint: String?
  package var underlying: (any Error & Sendable)?

  package init(category: Int32, message: String, hint: String?, underlying: (any Error & Sendable)? = nil) {
    self.category = category
    self.message = message
    self.hint = hint
    self.underlying = underlying
  }

  package init(_ error: HaulError) {
    self.init(
      category: error.category.exitCode, message: error.message, hint: error.hint,
      underlying: error.underlying)
  }

  /// Same category, message and hint, as a catalog would store them (the cause is not compared).
  package static func == (lhs: StoredError, rhs: StoredError) -> Bool {
    lhs.category == rhs.category && lhs.message == rhs.message && lhs.hint == rhs.hint
  }

  package var haulError: HaulError {
    let known: [HaulError.Category] = [
      .generic, .invalidInput, .fileSystem, .network, .tls, .authentication, .protocol, .server, .integrity,
      .interrupted,
    ]
    return HaulError(
      known.first { $0.exitCode == category } ?? .generic, message, hint: hint, underlying: underlying)
  }
}

/// How a run of a claimed download ended, as the catalog records it (releasing the claim).
package struct RunResult: Sendable, Equatable {
  package var state: DownloadState
  package var bytes: Int64
  package var totalBytes: Int64?
  package var file: String?
  package var error: StoredError?
  package var sha256: String?
  package var finalURL: String?
  package var finishedAt: Double?

  package init(
    state: DownloadState, bytes: Int64, totalBytes: Int64?, file: String?, error: StoredError? = nil,
    sha256: String? = nil, finalURL: String? = nil, finishedAt: Double? = nil
  ) {
    self.state = state
    self.bytes = bytes
    self.totalBytes = totalBytes
    self.file = file
    self.error = error
    self.sha256 = sha256
    self.finalURL = finalURL
    self.finishedAt = finishedAt
  }
}

/// Bytes and size of a running download, written a few times a second for listing.
package struct ProgressRecord: Sendable, Equatable {
  package var id: DownloadID
  package var bytes: Int64
  package var totalBytes: Int64?
  package var file: String?

  package init(id: DownloadID, bytes: Int64, totalBytes: Int64?, file: String?) {
    self.id = id
    self.bytes = bytes
    self.totalBytes = totalBytes
    self.file = file
  }
}

/// One change to the catalog. A list of them is committed all or nothing.
package enum RecordChange: Sendable, Equatable {
  case insert(DownloadRecord)
  /// A new state (and the error that goes with it; nil clears it).
  case state(DownloadID, DownloadState, error: StoredError?)
  case position(DownloadID, Int64)
  case options(DownloadID, StoredOptions, secrets: SecretParts)
  /// A new URL for the same file (aria2's changeUri); bytes held are kept for the next run to judge.
  case url(DownloadID, String, secrets: SecretParts)
  /// Ends the claim of a run with its outcome.
  case finish(DownloadID, RunResult)
  case delete(DownloadID)

  package var id: DownloadID {
    switch self {
    case .insert(let record): record.id
    case .state(let id, _, _), .position(let id, _), .options(let id, _, _), .url(let id, _, _),
      .finish(let id, _), .delete(let id):
      id
    }
  }

  /// Applies the change to the record it concerns (not for insert and delete).
  package func apply(to record: inout DownloadRecord) {
    switch self {
    case .insert(let new): record = new
    case .state(_, let state, let error):
      record.state = state
      record.error = error
    case .position(_, let position): record.position = position
    case .options(_, let options, let secrets):
      record.options = options
      record.secrets = record.secrets.subtracting(.inOptions).union(secrets.intersection(.inOptions))
    case .url(_, let url, let secrets):
      record.url = url
      record.secrets = record.secrets.subtracting(.urlPassword).union(secrets.intersection(.urlPassword))
    case .finish(_, let result):
      record.state = result.state
      record.bytes = result.bytes
      record.totalBytes = result.totalBytes
      record.file = result.file ?? record.file
      record.error = result.error
      record.sha256 = result.sha256
      record.finalURL = result.finalURL ?? record.finalURL
      record.finishedAt = result.finishedAt
    case .delete: break
    }
  }
}

extension DownloadRecord {
  /// Takes `other`'s options without a copy of their storage.
  package mutating func shareOptions(with other: DownloadRecord) { sharedOptions = other.sharedOptions }
}
