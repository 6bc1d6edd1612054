import FoundationEssentials
import Haul
import HaulRPC

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A subcommand's connection to the process that owns the catalog (`ControlServer`): JSON-RPC
/// with aria2's method names, one request per line. Used by one task at a time; its blocking
/// reads and writes run on a thread of their own.
final class ControlClient: Sendable {
  /// How long an answer may take on a connection that waits for a stopped owner (`haul ui`,
  /// which says so after `patience` and catches up when it continues).
  static let answerTimeout = Duration.seconds(300)
  /// How long an owner may be silent before `haul ui` names it (a stopped owner answers
  /// nobody; a running one answers within milliseconds).
  static let patience = Duration.seconds(3)
  /// How long a subcommand waits before it gives up on the owner: longer than `patience`, for
  /// a giving-up leaves the user unsure whether the request was carried out, and an owner
  /// whose disk is slow to sync (or a loaded machine) may take seconds to answer.
  static let commandPatience = Duration.seconds(10)

  /// What a subcommand says when the owner did not answer in time (its own exit status).
  struct Unanswered: Error, Sendable {}

  let location: CatalogLocation
  /// The owner's process id, where the system tells.
  let ownerProcess: pid_t?
  private let descriptor: Int32
  private let reader: Locked<LineReader>
  private let nextID = Locked(Int64(0))
  private let closedByOwner = Locked(false)

  /// How long `send` waits for an answer unless told otherwise.
  let answerWithin: Duration

  private init(location: CatalogLocation, descriptor: Int32, answerWithin: Duration) {
    self.location = location
    self.descriptor = descriptor
    self.answerWithin = answerWithin
    ownerProcess = ControlSocket.peerProcess(descriptor)
    reader = Locked(LineReader(descriptor: descriptor, limit: ControlServer.maximumLine))
  }

  deinit { close(descriptor) }

  /// The owner's control socket when one answers there; nil when none (no owner, or a
  /// stale socket a killed owner left). `waitingUpTo`: keep trying that long (an owner that
  /// has just opened the catalog makes its socket a moment later). `answerWithin`: how long a
  /// request waits for its answer (a subcommand: `commandPatience`, and gives up on a stopped owner).
  static func connect(
    _ location: CatalogLocation, waitingUpTo seconds: Double = 0, answerWithin: Duration = answerTimeout
  ) -> ControlClient? {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
      if let descriptor = ControlSocket.dial(location.controlSocket) {
        return ControlClient(location: location, descriptor: descriptor, answerWithin: answerWithin)
      }
      guard ContinuousClock.now < deadline else { return nil }
      usleep(50_000)
    }
  }

  /// Ends the connection (the descriptor closes with this object).
  func hangUp() { shutdown(descriptor, Int32(SHUT_RDWR)) }

  /// Whether the owner has closed the connection (it stopped serving, or its process ended):
  /// every request from now on fails.
  var isClosedByOwner: Bool { closedByOwner.withLock { $0 } }

  /// Sends one request line and reads the answer line, waiting at most `within` (default
  /// `answerWithin`) for each write and read.
  func send(_ request: JSONValue, within: Duration? = nil) async throws(HaulError) -> JSONValue {
    let within = within ?? answerWithin
    let outcome: Result<JSONValue, HaulError> = await Detached.run { [self] in
      Self.setTimeouts(descriptor, within)
      guard ControlServer.write(request.serialized + [0x0A], to: descriptor) else {
        // A stopped owner reads nothing: its socket's buffer fills and the write times out.
        if errno == EAGAIN || errno == EWOULDBLOCK { return .failure(unanswered(within)) }
        closedByOwner.withLock { $0 = true }
        return .failure(lost("it closed the connection"))
      }
      switch reader.withLock({ $0.next() }) {
      case .line(let bytes):
        do throws(JSONParseError) {
          return .success(try JSONValue.parse(bytes))
        } catch {
          return .failure(HaulError(.generic, "the catalog's owner answered with something that is not JSON"))
        }
      case .tooLong: return .failure(HaulError(.generic, "the catalog's owner answered with too much"))
      case .end:
        if errno == EAGAIN || errno == EWOULDBLOCK { return .failure(unanswered(within)) }
        closedByOwner.withLock { $0 = true }
        return .failure(lost("it closed the connection"))
      }
    }
    return try outcome.get()
  }

  private static func setTimeouts(_ descriptor: Int32, _ within: Duration) {
    let (seconds, attoseconds) = within.components
    var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    let size = socklen_t(MemoryLayout<timeval>.size)
    _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, size)
    _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, size)
  }

  /// The owner took longer than `within` (stopped with Ctrl-Z or SIGSTOP, say). What it has
  /// read of the request it may still carry out when it continues: nothing can take it back.
  private func unanswered(_ within: Duration) -> HaulError {
    let seconds = within.components.seconds
    let process = ownerProcess.map { "process \($0)" } ?? "the process"
    let what =
      ownerProcess.map { "continue it (kill -CONT \($0)) or end it (kill \($0))" }
      ?? "continue or end the haul run, haul ui or haul daemon that has it"
    return HaulError(
      .generic,
      "\(process), which owns the catalog \(location.shown), did not answer within \(seconds) s (is it stopped?)",
      hint: "\(what); a request it already received cannot be taken back and may still be carried out "
        + "when it continues: check with haul ls before trying again",
      underlying: Unanswered())
  }

  private func lost(_ what: String) -> HaulError {
    HaulError(
      .generic, "the process that owns the catalog \(location.shown) did not carry out the request: \(what)",
      hint: "check that haul run, haul ui or the daemon is still running, and try again")
  }

  /// One method call; its result, or its error as a `HaulError`.
  func call(_ method: String, _ params: [JSONValue] = [], within: Duration? = nil) async throws(HaulError)
    -> JSONValue
  {
    try await batch([(method, params)], within: within)[0].get()
  }

  /// Calls in one request (a JSON-RPC batch, answered in order), at most `RPCEnvelope.maximumBatch`.
  func batch(_ calls: [(method: String, params: [JSONValue])], within: Duration? = nil)
    async throws(HaulError)
    -> [Result<JSONValue, HaulError>]
  {
    let first = nextID.withLock { id in
      defer { id += Int64(calls.count) }
      return id
    }
    let requests = calls.enumerated().map { index, call -> JSONValue in
      [
        "jsonrpc": "2.0", "id": .integer(first + Int64(index)), "method": .string(call.method),
        "params": .array(call.params),
      ]
    }
    let answer = try await send(requests.count == 1 ? requests[0] : .array(requests), within: within)
    let replies = answer.array ?? [answer]
    var byID: [Int64: JSONValue] = [:]
    for reply in replies { if let id = reply["id"]?.integer { byID[id] = reply } }
    return calls.indices.map { index in
      guard let reply = byID[first + Int64(index)] else {
        return .failure(HaulError(.generic, "the catalog's owner did not answer \(calls[index].method)"))
      }
      if let error = reply["error"]?.object {
        return .failure(Self.error(error, method: calls[index].method))
      }
      return .success(reply["result"] ?? .null)
    }
  }

  /// One of `ControlMethods`: its `ok` value, or its refusal as the `HaulError` it was.
  func perform(_ method: String, _ params: [JSONValue], within: Duration? = nil) async throws(HaulError)
    -> JSONValue
  {
    let result = try await call(method, params, within: within)
    if let failure = result["failure"] { throw ControlCoding.error(failure) }
    guard let value = result["ok"] else {
      throw HaulError(.generic, "the catalog's owner answered \(method) with something haul does not know")
    }
    return value
  }

  /// An aria2 error object as the `HaulError` a subcommand reports.
  static func error(_ object: JSONObject, method: String) -> HaulError {
    let message = object["message"]?.string ?? "an unknown error"
    switch object["code"]?.integer {
    case .some(-32601):
      return HaulError(
        .generic, "the process that owns the catalog does not offer \(method)",
        hint: "stop it (haul run: Ctrl-C) and try again, or upgrade it")
    case .some(1) where message.hasPrefix("No such method"):
      return HaulError(
        .generic, "the process that owns the catalog does not offer \(method)",
        hint: "stop it (haul run: Ctrl-C) and try again, or upgrade it")
    case .some(1):
      return HaulError(.invalidInput, message)
    default:
      return HaulError(.generic, "the catalog's owner refused \(method): \(message)")
    }
  }
}
