import FoundationEssentials
import Haul
import HaulDaemon
import HaulRPC

/// The methods the subcommands call on the catalog's owner: each is one `DownloadManager` call
/// with the subcommand's own meaning (a list of ids changed in one transaction, `--delete-files`,
/// every download option and the credentials a catalog does not keep), which aria2's methods
/// (one gid each, options as aria2 spells them) cannot carry; and what `haul ui` attached to
/// the owner needs besides (`snapshot`, `cancel`, `limits`). Every kind of owner serves them
/// (`ControlServer.start` adds them to whatever else it serves).
///
/// A refusal is a result, not a JSON-RPC error: `{"failure": {category, message, hint}}`, so that
/// the subcommand reports it exactly as when it opens the catalog itself (same message, same
/// exit status). Success is `{"ok": …}`.
enum ControlMethods {
  static let add = "haul.add"
  static let pause = "haul.pause"
  static let resume = "haul.resume"
  static let remove = "haul.remove"
  static let cancel = "haul.cancel"
  /// Every download and the statistics at one moment, live speeds included (`haul ui` attached
  /// to the owner polls it): `{"downloads": [...], "statistics": {...}}` (`ControlSnapshot`).
  static let snapshot = "haul.snapshot"
  /// `[{"maxConcurrent": N, "overallRateLimit": BYTES|null}]`, each member optional: changes
  /// those given; answers both as they are then (`[{}]` only reads them).
  static let limits = "haul.limits"
  /// `[ID, BYTES|null]`: one download's own rate limit (null lifts it), changed as it runs.
  static let rateLimit = "haul.rateLimit"

  /// The methods on `manager`.
  static func methods(_ manager: DownloadManager) -> [RPCMethod] {
    [
      RPCMethod(add) { params in
        // [{"requests": [...], "position": N (absent: the end), "paused": bool}]
        let object = JSONValue.object(try params.requiredObject(at: 0))
        let requests = try (object["requests"]?.array ?? []).map { value throws(RPCError) in
          try ControlCoding.request(value)
        }
        let position = object["position"]?.integer.map { QueuePosition.index(Int($0)) } ?? .end
        let paused = object["paused"] == .bool(true)
        return await outcome { () throws(HaulError) in
          let ids = try await manager.add(requests, at: position, paused: paused)
          return .array(ids.map { .string($0.description) })
        }
      },
      RPCMethod(pause) { params in
        let ids = try self.ids(params)
        return await outcome { () throws(HaulError) in
          if let ids { try await manager.pause(ids) } else { try await manager.pauseAll() }
          return .null
        }
      },
      RPCMethod(resume) { params in
        let ids = try self.ids(params)
        return await outcome { () throws(HaulError) in
          // No ids: `haul resume --all`, which takes failed downloads too.
          if let ids {
            try await manager.resume(ids)
          } else {
            try await manager.resumeAll(includingFailed: true)
          }
          return .null
        }
      },
      RPCMethod(cancel) { params in
        let ids = try self.ids(params)
        let deleting = params.values.count > 1 && params.values[1] == .bool(true)
        return await outcome { () throws(HaulError) in
          if let ids {
            try await manager.cancel(ids, deletingFiles: deleting)
          } else {
            try await manager.cancelAll(deletingFiles: deleting)
          }
          return .null
        }
      },
      RPCMethod(snapshot) { _ in
        ["ok": ControlSnapshot(manager.snapshot()).json]
      },
      RPCMethod(limits) { params in
        let object = JSONValue.object(try params.object(at: 0) ?? [:])
        var concurrent: Int?
        if let value = object["maxConcurrent"] {
          guard let number = value.integer else { throw RPCError("haul: maxConcurrent must be an integer") }
          concurrent = Int(clamping: number)
        }
        var rate: Int64??
        if let value = object["overallRateLimit"] {
          guard value == .null || value.integer != nil else {
            throw RPCError("haul: overallRateLimit must be an integer or null")
          }
          rate = .some(value.integer)
        }
        return await outcome { () throws(HaulError) in
          if let concurrent { try await manager.setMaxConcurrentDownloads(concurrent) }
          if let rate { try manager.setOverallRateLimit(rate) }
          return [
            "maxConcurrent": .integer(Int64(manager.maxConcurrentDownloads)),
            "overallRateLimit": manager.overallRateLimit.map(JSONValue.integer) ?? .null,
          ]
        }
      },
      RPCMethod(rateLimit) { params in
        let text = try params.requiredString(at: 0)
        guard let id = DownloadID(text) else { throw RPCError("haul: '\(text)' is not a download id") }
        let value = params.values.count > 1 ? params.values[1] : .null
        guard value == .null || value.integer != nil else {
          throw RPCError("haul: a rate limit must be an integer or null")
        }
        return await outcome { () throws(HaulError) in
          try await manager.setRateLimit(value.integer, of: id)
          return .null
        }
      },
      RPCMethod(remove) { params in
        let ids = try self.ids(params) ?? []
        let deleting = params.values.count > 1 && params.values[1] == .bool(true)
        return await outcome { () throws(HaulError) in
          try await manager.remove(ids, deletingFiles: deleting)
          return .null
        }
      },
    ]
  }

  /// The ids of the first parameter; nil (every download) when it is null or missing.
  private static func ids(_ params: RPCParameters) throws(RPCError) -> [DownloadID]? {
    guard params.values.first ?? .null != .null, let values = try params.array(at: 0) else { return nil }
    return try values.map { value throws(RPCError) in
      guard let text = value.string, let id = DownloadID(text) else {
        throw RPCError("haul: '\(value.serializedString)' is not a download id")
      }
      return id
    }
  }

  private static func outcome(_ body: () async throws(HaulError) -> JSONValue) async -> JSONValue {
    do throws(HaulError) {
      return ["ok": try await body()]
    } catch {
      return ["failure": ControlCoding.json(error)]
    }
  }
}

/// The JSON a request and a refusal travel in on the control socket. The socket is private to
/// the user, so credentials travel too: the owner keeps them in memory, never in the catalog.
enum ControlCoding {
  static func json(_ request: DownloadRequest) -> JSONValue {
    let (stored, secrets) = StoredOptions.split(request.options)
    let options: JSONValue
    do {
      options = try JSONValue.parse(Array(try JSONEncoder().encode(stored)))
    } catch {
      // StoredOptions is plain data; its encoding cannot fail.
      options = .null
    }
    var object: JSONObject = ["url": .string(request.url), "options": options]
    switch request.destination {
    case .file(let url): object["file"] = .string(url.path)
    case .directory(let url): object["directory"] = .string(url.path)
    }
    object["secretHeaders"] = .object(
      JSONObject(secrets.sorted { $0.key < $1.key }.map { (String($0.key), JSONValue.string($0.value)) }))
    // Never encoded with the options: the owner keeps them in memory, as the headers.
    if let password = request.options.network.password { object["password"] = .string(password) }
    if let cookies = request.options.network.cookies { object["cookies"] = .string(cookies) }
    return .object(object)
  }

  static func request(_ value: JSONValue) throws(RPCError) -> DownloadRequest {
    guard let url = value["url"]?.string, let options = value["options"], options != .null else {
      throw RPCError("haul: a download to add needs a url and options")
    }
    let destination: DownloadDestination
    if let file = value["file"]?.string {
      destination = .file(URL(fileURLWithPath: file))
    } else if let directory = value["directory"]?.string {
      destination = .directory(URL(fileURLWithPath: directory))
    } else {
      throw RPCError("haul: a download to add needs a file or a directory")
    }
    let stored: StoredOptions
    do {
      stored = try JSONDecoder().decode(StoredOptions.self, from: Data(options.serialized))
    } catch {
      throw RPCError("haul: the options of \(url) are not haul's")
    }
    var secrets: [Int: String] = [:]
    for key in value["secretHeaders"]?.object?.keys ?? [] {
      if let index = Int(key), let header = value["secretHeaders"]?[key]?.string { secrets[index] = header }
    }
    var withSecrets = stored.options(secretHeaders: secrets)
    withSecrets.network.password = value["password"]?.string
    withSecrets.network.cookies = value["cookies"]?.string
    return DownloadRequest(url: url, to: destination, options: withSecrets)
  }

  static func json(_ error: HaulError) -> JSONValue {
    let stored = StoredError(error)
    return [
      "category": .integer(Int64(stored.category)), "message": .string(stored.message),
      "hint": stored.hint.map(JSONValue.string) ?? .null,
    ]
  }

  static func error(_ value: JSONValue) -> HaulError {
    StoredError(
      category: Int32(clamping: value["category"]?.integer ?? 1),
      message: value["message"]?.string ?? "the catalog's owner refused the request",
      hint: value["hint"]?.string
    ).haulError
  }
}
