import Haul

/// Ids as a user types them: the full 16 hex digits, or a prefix of at least 4 that only one
/// download's id starts with (as git takes commit ids). Pure: the ids to match come in.
///
///     let ids = try IDResolver.resolve(["2089", "d3a1f00b"], among: known)
struct IDResolver {
  static let minimumPrefix = 4

  /// The prefixes, checked and lower-cased, in the order given (each once).
  let prefixes: [String]

  /// - Throws: `.invalidInput` for something that is not hex digits, or too short.
  init(_ given: [String]) throws(HaulError) {
    var seen: Set<String> = []
    var prefixes: [String] = []
    for text in given {
      let prefix = text.lowercased()
      guard !prefix.isEmpty, prefix.count <= 16, prefix.utf8.allSatisfy(Self.isHexDigit) else {
        throw HaulError(
          .invalidInput,
          "'\(ProgressLine.sanitize(text))' is not a download id (16 hex digits, or the first few, as haul ls shows)"
        )
      }
      guard prefix.count >= Self.minimumPrefix else {
        throw HaulError(
          .invalidInput,
          "'\(prefix)' is too short for an id: give at least \(Self.minimumPrefix) of its digits")
      }
      if seen.insert(prefix).inserted { prefixes.append(prefix) }
    }
    self.prefixes = prefixes
  }

  /// What each prefix matched so far: `feed` every known id once, then `result()`.
  struct Matcher {
    let resolver: IDResolver
    private(set) var matches: [[String]]

    init(_ resolver: IDResolver) {
      self.resolver = resolver
      matches = Array(repeating: [], count: resolver.prefixes.count)
    }

    mutating func feed(_ id: DownloadID) { feed(id.description) }

    /// A known id as 16 lower-case hex digits (a fleet queue's job ids are such strings too).
    mutating func feed(_ text: String) {
      for (index, prefix) in resolver.prefixes.enumerated() where text.hasPrefix(prefix) {
        // Two are enough to call a prefix ambiguous; a few more make the message useful.
        if matches[index].count < 4 { matches[index].append(text) }
      }
    }

    /// One id per prefix, in order, without repeats.
    /// - Throws: `.invalidInput` naming the first prefix that matches nothing or several ids.
    func result() throws(HaulError) -> [String] {
      var ids: [String] = []
      for (prefix, found) in zip(resolver.prefixes, matches) {
        switch found.count {
        case 0:
          throw HaulError(
            .invalidInput,
            prefix.count == 16
              ? "no download has the id \(prefix)" : "no download's id starts with \(prefix)",
            hint: "haul ls lists the downloads and their ids")
        case 1:
          if !ids.contains(found[0]) { ids.append(found[0]) }
        default:
          let some = found.prefix(3).joined(separator: ", ") + (found.count > 3 ? ", …" : "")
          throw HaulError(
            .invalidInput, "\(prefix) is ambiguous: several downloads' ids start with it (\(some))",
            hint: "give more of its digits")
        }
      }
      return ids
    }
  }

  /// Resolves against `known`, all or nothing.
  func resolve(among known: some Sequence<DownloadID>) throws(HaulError) -> [DownloadID] {
    var matcher = Matcher(self)
    for id in known { matcher.feed(id) }
    return try matcher.result().compactMap(DownloadID.init)
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
  }
}
