import FoundationEssentials

/// Why a request body is not JSON.
package enum JSONParseError: Error, Equatable, Sendable {
  /// Arrays and objects nest deeper than the limit.
  case tooDeep(limit: Int)
  /// More values than any request needs.
  case tooManyValues(limit: Int)
  /// Not JSON at all (syntax, invalid UTF-8, a number out of range, a repeated member).
  case invalid
}

extension JSONValue {
  /// The deepest nesting of arrays and objects a request may have. aria2's deepest real
  /// request (system.multicall of addUri with headers) nests 5; the limit also bounds the
  /// recursion of decoding, whose stack the daemon's threads must hold.
  package static let maximumDepth = 64
  /// The most values (of any kind, nested ones included) a text may hold: a batch of 1,000
  /// calls needs about 10,000. Bounds the memory a 2 MiB body can make the scan take.
  package static let maximumValues = 200_000

  /// Decodes one JSON text with FoundationEssentials' `JSONDecoder`, guided by its
  /// `JSONShape` so that every value is decoded as exactly its own type.
  package static func parse(
    _ bytes: some Collection<UInt8>, maximumDepth: Int = maximumDepth, maximumValues: Int = maximumValues
  ) throws(JSONParseError) -> JSONValue {
    let array = Array(bytes)
    let shape: JSONShape
    do throws(JSONShape.Failure) {
      shape = try JSONShape.scan(array, maximumDepth: maximumDepth, maximumValues: maximumValues)
    } catch {
      switch error {
      case .tooDeep: throw .tooDeep(limit: maximumDepth)
      case .tooManyValues: throw .tooManyValues(limit: maximumValues)
      case .malformed: throw .invalid
      }
    }
    do {
      return try JSONDecoder().decode(Shaped.self, from: Data(array), configuration: shape).value
    } catch {
      throw .invalid
    }
  }

  /// The top-level value, decoded with its shape as configuration: it walks the decoder's
  /// containers with it.
  private struct Shaped: DecodableWithConfiguration {
    let value: JSONValue

    init(from decoder: any Decoder, configuration shape: JSONShape) throws {
      switch shape {
      case .array(let elements):
        var container = try decoder.unkeyedContainer()
        value = try Self.array(&container, elements)
      case .object(let members):
        value = try Self.object(try decoder.container(keyedBy: Key.self), members)
      default:
        let container = try decoder.singleValueContainer()
        switch shape {
        case .null:
          guard container.decodeNil() else { throw Self.mismatch }
          value = .null
        case .bool: value = .bool(try container.decode(Bool.self))
        case .integer: value = .integer(try container.decode(Int64.self))
        case .double: value = .double(try container.decode(Double.self))
        case .bigInteger(let text): value = try Self.bigInteger(text, container.decode(Double.self))
        default: value = .string(try container.decode(String.self))
        }
      }
    }

    /// The decoder validated the number (`decoded`, unused: it has lost digits); its text is
    /// kept so that it goes back out exactly as it came.
    private static func bigInteger(_ text: String, _ decoded: Double) throws -> JSONValue {
      guard decoded.isFinite else { throw mismatch }
      return .number(text)
    }

    private static var mismatch: DecodingError {
      .dataCorrupted(.init(codingPath: [], debugDescription: "the text and its shape differ"))
    }

    private static func array(_ container: inout any UnkeyedDecodingContainer, _ shapes: [JSONShape]) throws
      -> JSONValue
    {
      var values: [JSONValue] = []
      values.reserveCapacity(shapes.count)
      for shape in shapes {
        switch shape {
        case .null:
          guard try container.decodeNil() else { throw mismatch }
          values.append(.null)
        case .bool: values.append(.bool(try container.decode(Bool.self)))
        case .integer: values.append(.integer(try container.decode(Int64.self)))
        case .double: values.append(.double(try container.decode(Double.self)))
        case .bigInteger(let text): values.append(try bigInteger(text, container.decode(Double.self)))
        case .string: values.append(.string(try container.decode(String.self)))
        case .array(let elements):
          var nested = try container.nestedUnkeyedContainer()
          values.append(try array(&nested, elements))
        case .object(let members):
          values.append(try object(try container.nestedContainer(keyedBy: Key.self), members))
        }
      }
      guard container.isAtEnd else { throw mismatch }
      return .array(values)
    }

    private static func object(_ container: KeyedDecodingContainer<Key>, _ members: [JSONShape.Member]) throws
      -> JSONValue
    {
      guard container.allKeys.count == members.count else { throw mismatch }
      var object = JSONObject()
      for member in members {
        let key = Key(member.key)
        switch member.shape {
        case .null:
          guard try container.decodeNil(forKey: key) else { throw mismatch }
          object[member.key] = .null
        case .bool: object[member.key] = .bool(try container.decode(Bool.self, forKey: key))
        case .integer: object[member.key] = .integer(try container.decode(Int64.self, forKey: key))
        case .double: object[member.key] = .double(try container.decode(Double.self, forKey: key))
        case .bigInteger(let text):
          object[member.key] = try bigInteger(text, container.decode(Double.self, forKey: key))
        case .string: object[member.key] = .string(try container.decode(String.self, forKey: key))
        case .array(let elements):
          var nested = try container.nestedUnkeyedContainer(forKey: key)
          object[member.key] = try array(&nested, elements)
        case .object(let members):
          object[member.key] = try self.object(
            try container.nestedContainer(keyedBy: Key.self, forKey: key), members)
        }
      }
      return .object(object)
    }
  }

  private struct Key: CodingKey {
    let stringValue: String
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
  }
}
