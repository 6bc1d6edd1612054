/// The option scanner of the commands with a small table of their own (`haul daemon`, `haul
/// worker`), so that they read options as the main command does and suggest the same way for
/// a typo: `--dir DIR`, `--dir=DIR`, `-d DIR`, `-dDIR`, `-qd DIR`; an unknown option is
/// `daemon: unknown option '--rpc-secert' (did you mean '--rpc-secret'?)`. These commands take
/// no other arguments.
struct OptionScanner<Key: Sendable>: Sendable {
  /// One option: its key for the command's switch, its spellings, whether a value follows.
  struct Option: Sendable {
    let key: Key
    let long: String
    let short: Character?
    let takesValue: Bool

    init(_ key: Key, _ long: String, short: Character? = nil, value takesValue: Bool = false) {
      self.key = key
      self.long = long
      self.short = short
      self.takesValue = takesValue
    }
  }

  /// An option as given: its key, how it was spelt (for messages) and its value ("" for a flag).
  struct Found {
    let key: Key
    let spelling: String
    let value: String
  }

  /// The command's name, which starts its messages (`daemon`, `worker`).
  let command: String
  let options: [Option]

  /// The options given, in order.
  func scan(_ arguments: [String]) throws(UsageError) -> [Found] {
    var found: [Found] = []
    var rest = arguments[...]
    func value(_ spelling: String, inline: String?) throws(UsageError) -> String {
      if let inline { return inline }
      guard let next = rest.popFirst() else { throw UsageError("\(spelling) needs a value") }
      return next
    }
    while let argument = rest.popFirst() {
      if argument.hasPrefix("--") {
        let body = argument.dropFirst(2)
        let equals = body.firstIndex(of: "=")
        let spelling = "--" + body[..<(equals ?? body.endIndex)]
        let inline = equals.map { String(body[body.index(after: $0)...]) }
        guard let option = options.first(where: { "--" + $0.long == spelling }) else {
          throw unknownOption(spelling)
        }
        if !option.takesValue, inline != nil { throw UsageError("\(spelling): takes no value") }
        let text = option.takesValue ? try value(spelling, inline: inline) : ""
        found.append(Found(key: option.key, spelling: spelling, value: text))
      } else if argument.hasPrefix("-"), argument.count > 1 {
        // `-dir` is far likelier a typo for `--dir` than `-d ir`, as in the main command.
        if argument.count > 2, options.contains(where: { "-" + $0.long == argument }) {
          throw unknownOption(argument)
        }
        var letters = Substring(argument.dropFirst())
        while let letter = letters.popFirst() {
          let spelling = "-" + String(letter)
          guard let option = options.first(where: { $0.short == letter }) else {
            throw unknownOption(spelling)
          }
          var text = ""
          if option.takesValue {
            text = try value(spelling, inline: letters.isEmpty ? nil : String(letters))
            letters = ""
          }
          found.append(Found(key: option.key, spelling: spelling, value: text))
        }
      } else {
        throw UsageError("\(command): unexpected argument '\(argument)' (it takes options only)")
      }
    }
    return found
  }

  /// With the main command's suggestion of a close long option.
  func unknownOption(_ spelling: String) -> UsageError {
    let message = "\(command): unknown option '\(spelling)'"
    guard let close = CommandLineOptions.suggestion(for: spelling, longNames: options.map(\.long)) else {
      return UsageError(message)
    }
    return UsageError(message + " (did you mean '\(close)'?)")
  }
}
