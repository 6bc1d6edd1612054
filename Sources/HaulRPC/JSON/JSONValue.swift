/// A JSON value as JSON-RPC carries it: requests are decoded into it, replies built from it.
///
/// Integers stay integers (`integer`) so ids and aria2's positions round-trip exactly; larger
/// ones keep their text (`number`), since JSON-RPC wants an id back exactly as sent; numbers
/// with a fraction or exponent are `double`. Objects keep the order they were built in, so
/// replies come out in a stable order.
package enum JSONValue: Sendable, Equatable {
  case null
  case bool(Bool)
  case integer(Int64)
  case double(Double)
  /// A whole number beyond Int64, as its JSON text (`12345678901234567890`).
  case number(String)
  case string(String)
  case array([JSONValue])
  case object(JSONObject)

  package var string: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  package var integer: Int64? {
    if case .integer(let value) = self { return value }
    return nil
  }

  package var array: [JSONValue]? {
    if case .array(let value) = self { return value }
    return nil
  }

  package var object: JSONObject? {
    if case .object(let value) = self { return value }
    return nil
  }

  /// The member `key` of an object; nil for anything else.
  package subscript(key: String) -> JSONValue? { object?[key] }

  /// aria2's own name for the value's type, for error messages.
  package var typeName: String {
    switch self {
    case .null: "null"
    case .bool: "boolean"
    case .integer, .double, .number: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
  }
}

/// A JSON object: members in insertion order, looked up by key (the last of duplicates wins).
package struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
  package private(set) var members: [(key: String, value: JSONValue)] = []

  package init() {}

  package init(dictionaryLiteral elements: (String, JSONValue)...) {
    for (key, value) in elements { self[key] = value }
  }

  package init(_ members: some Sequence<(String, JSONValue)>) {
    for (key, value) in members { self[key] = value }
  }

  package var count: Int { members.count }
  package var keys: [String] { members.map(\.key) }

  /// Setting an existing key replaces its value in place; setting nil removes it.
  package subscript(key: String) -> JSONValue? {
    get { members.last(where: { $0.key == key })?.value }
    set {
      if let index = members.firstIndex(where: { $0.key == key }) {
        if let newValue { members[index].value = newValue } else { members.remove(at: index) }
      } else if let newValue {
        members.append((key, newValue))
      }
    }
  }

  /// Equal when they hold the same members, in any order.
  package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
    guard lhs.count == rhs.count else { return false }
    return lhs.members.allSatisfy { rhs[$0.key] == $0.value }
  }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
  ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
  package init(stringLiteral value: String) { self = .string(value) }
  package init(integerLiteral value: Int64) { self = .integer(value) }
  package init(booleanLiteral value: Bool) { self = .bool(value) }
  package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
  package init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
  package init(nilLiteral: ()) { self = .null }
}
