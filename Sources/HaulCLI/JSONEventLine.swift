import Haul

/// `--json` output: one JSON object per event, one per line, keys in a fixed order.
enum JSONEventLine {
  /// A JSON value; enough for flat event objects.
  enum Value: Equatable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null

    static func optional(_ value: Int64?) -> Value { value.map(Value.int) ?? .null }
    static func optional(_ value: String?) -> Value { value.map(Value.string) ?? .null }
    static func optional(_ value: Double?) -> Value { value.map(Value.double) ?? .null }
  }

  /// The event as one line of JSON, without the trailing newline. With several URLs in one run,
  /// `source` (the URL as given) follows `event`, so that lines can be told apart.
  static func encode(_ event: DownloadEvent, source: String? = nil) -> String {
    var fields = fields(of: event)
    if let source { fields.insert(("source", .string(source)), at: 1) }
    return object(fields)
  }

  /// The object for a failure that happened before any event could be sent (e.g. bad options).
  static func encodeFailure(_ error: HaulError) -> String {
    object(fields(of: .failed(error)))
  }

  static func fields(of event: DownloadEvent) -> [(String, Value)] {
    switch event {
    case .started(let start):
      return [
        ("event", .string("started")),
        ("file", .string(start.file.path)),
        ("url", .string(start.finalURL)),
        ("resumed_from", .int(start.resumedFrom)),
        ("total", .optional(start.totalBytes)),
      ]
    case .progress(let progress):
      return [("event", .string("progress"))] + progressFields(progress)
    case .paused(let progress):
      return [("event", .string("paused"))] + progressFields(progress)
    case .resumed:
      return [("event", .string("resumed"))]
    case .restarted(let reason):
      return [("event", .string("restarted")), ("reason", .string(reason))]
    case .retrying(let notice):
      return [
        ("event", .string("retrying")),
        ("attempt", .int(Int64(notice.attempt))),
        ("max_attempts", .int(Int64(notice.maxAttempts))),
        ("delay", .double(rounded(notice.delay, places: 3))),
        ("reason", .string(notice.reason.message)),
        ("category", .string(categoryName(notice.reason.category))),
      ]
    case .completed(let result):
      return [
        ("event", .string("completed")),
        ("file", .string(result.file.path)),
        ("url", .string(result.finalURL)),
        ("bytes", .int(result.totalBytes)),
        ("received", .int(result.bytesReceived)),
        ("resumed_from", .int(result.resumedFrom)),
        ("already_complete", .bool(result.wasAlreadyComplete)),
        ("remote_changed", .bool(result.remoteChanged)),
        ("server_not_checked", .optional(result.serverNotChecked)),
        ("seconds", .double(rounded(result.duration, places: 3))),
        ("sha256", result.sha256.map { .string($0) } ?? .null),
      ]
    case .failed(let error):
      return [
        ("event", .string("failed")),
        ("category", .string(categoryName(error.category))),
        ("exit_code", .int(Int64(ExitStatus.code(for: error)))),
        ("message", .string(error.message)),
        ("hint", .optional(error.hint)),
      ]
    }
  }

  private static func progressFields(_ progress: DownloadProgress) -> [(String, Value)] {
    [
      ("bytes", .int(progress.bytes)),
      ("total", .optional(progress.totalBytes)),
      ("bytes_per_second", .double(rounded(progress.bytesPerSecond, places: 1))),
      ("seconds_remaining", .optional(progress.secondsRemaining.map { rounded($0, places: 1) })),
      ("connections", .int(Int64(progress.connections))),
    ]
  }

  /// Stable, machine-friendly names for error categories.
  static func categoryName(_ category: HaulError.Category) -> String {
    switch category {
    case .invalidInput: "invalid_input"
    case .fileSystem: "file_system"
    case .network: "network"
    case .tls: "tls"
    case .authentication: "authentication"
    case .protocol: "protocol"
    case .server: "server"
    case .integrity: "integrity"
    case .interrupted: "interrupted"
    default: "generic"
    }
  }

  // MARK: - Writing JSON

  static func object(_ fields: [(String, Value)]) -> String {
    "{" + fields.map { quote($0.0) + ":" + text(of: $0.1) }.joined(separator: ",") + "}"
  }

  static func text(of value: Value) -> String {
    switch value {
    case .string(let string): quote(string)
    case .int(let int): String(int)
    case .bool(let bool): bool ? "true" : "false"
    case .null: "null"
    case .double(let double):
      // JSON has no NaN or infinity; whole numbers print without an exponent or `.0`.
      if !double.isFinite {
        "null"
      } else if double == double.rounded(), abs(double) < 1e15 {
        String(Int64(double))
      } else {
        String(double)
      }
    }
  }

  /// A JSON string literal. Non-ASCII stays as UTF-8; control characters, quotes, backslashes
  /// and U+2028/U+2029 (which break JavaScript parsers) are escaped.
  static func quote(_ string: String) -> String {
    var out = "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\u{08}": out += "\\b"
      case "\u{0C}": out += "\\f"
      case "\u{2028}", "\u{2029}", "\u{7F}":
        out += "\\u" + hex4(scalar.value)
      default:
        if scalar.value < 0x20 {
          out += "\\u" + hex4(scalar.value)
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out + "\""
  }

  private static func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: false)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }

  static func rounded(_ value: Double, places: Int) -> Double {
    guard value.isFinite else { return value }
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    return (value * scale).rounded() / scale
  }
}
