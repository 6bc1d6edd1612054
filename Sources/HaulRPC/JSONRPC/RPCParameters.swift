/// A call's positional parameters, read the way aria2 reads them: a missing optional one is
/// nil, a present one of the wrong type is an error, with aria2's messages.
package struct RPCParameters: Sendable, Equatable {
  package private(set) var values: [JSONValue]

  package init(_ values: [JSONValue]) { self.values = values }

  /// Removes and returns aria2's secret: a first parameter that is a string starting with
  /// `token:` (anything else stays a parameter, and the call is then unauthorized).
  package mutating func takeToken() -> String? {
    guard case .string(let first) = values.first, first.hasPrefix("token:") else { return nil }
    values.removeFirst()
    return String(first.dropFirst("token:".count))
  }

  package var count: Int { values.count }

  package func string(at index: Int) throws(RPCError) -> String? {
    try value(at: index) { $0.string }
  }

  package func integer(at index: Int) throws(RPCError) -> Int64? {
    try value(at: index) { $0.integer }
  }

  package func array(at index: Int) throws(RPCError) -> [JSONValue]? {
    try value(at: index) { $0.array }
  }

  package func object(at index: Int) throws(RPCError) -> JSONObject? {
    try value(at: index) { $0.object }
  }

  package func requiredString(at index: Int) throws(RPCError) -> String {
    try required(index, try string(at: index))
  }

  package func requiredInteger(at index: Int, atLeast minimum: Int64? = nil) throws(RPCError) -> Int64 {
    let value = try required(index, try integer(at: index))
    if let minimum, value < minimum {
      throw RPCError(
        "The integer parameter at \(index) has invalid value: the value must be greater than or equal to \(minimum)."
      )
    }
    return value
  }

  package func requiredArray(at index: Int) throws(RPCError) -> [JSONValue] {
    try required(index, try array(at: index))
  }

  package func requiredObject(at index: Int) throws(RPCError) -> JSONObject {
    try required(index, try object(at: index))
  }

  /// The strings of an array parameter; aria2 skips elements of other types.
  package func strings(at index: Int) throws(RPCError) -> [String]? {
    try array(at: index)?.compactMap(\.string)
  }

  private func value<T>(at index: Int, _ cast: (JSONValue) -> T?) throws(RPCError) -> T? {
    guard index < values.count else { return nil }
    guard let value = cast(values[index]) else {
      throw RPCError("The parameter at \(index) has wrong type.")
    }
    return value
  }

  private func required<T>(_ index: Int, _ value: T?) throws(RPCError) -> T {
    guard let value else { throw RPCError("The parameter at \(index) is required but missing.") }
    return value
  }
}

/// Compares secrets in time that depends on their lengths only, not on where they differ.
package enum SecretComparison {
  package static func equal(_ given: String, _ expected: String) -> Bool {
    let lhs = Array(given.utf8)
    let rhs = Array(expected.utf8)
    var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count) | (lhs.count == rhs.count ? 0 : 1)
    for index in 0..<max(lhs.count, rhs.count) {
      let left = index < lhs.count ? lhs[index] : 0
      let right = index < rhs.count ? rhs[index] : 0
      difference |= left ^ right
    }
    return difference == 0
  }
}
