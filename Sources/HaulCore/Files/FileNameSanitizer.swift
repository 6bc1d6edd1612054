/// Turns names chosen by a server (or a URL) into one safe file name inside the target directory.
///
/// Guarantees for every non-nil result: no `/`, `\` or NUL; no control characters, bidi
/// overrides or zero-width characters; not empty, `.` or `..` (nor made only of dots); no
/// leading or trailing whitespace, no leading dot (unless asked to keep it) and no trailing
/// dot; at most 246 bytes of UTF-8 (so that Haul's own `NAME.haul.tmp` still fits the usual
/// 255-byte limit); and it does not end in Haul's own `.part` or `.haul` suffixes. Nil means
/// nothing usable remained and the caller should use a default such as `index.html` or `download`.
///
/// Decisions:
/// - Leading dots are dropped (`.bash_profile` becomes `bash_profile`), as browsers do: a
///   server must not be able to plant a hidden file such as a login script in the directory.
///   Names people choose themselves (a queue job's file name) may keep them
///   (`keepingLeadingDots`); `-o` never comes here.
/// - A name ending in `.part` or `.haul` (in any case, since macOS file systems usually
///   ignore case) gets `-file` appended, so it can never collide with Haul's own partial or
///   state files.
/// - Only path separators and invisible or control characters are touched; other characters
///   (`:`, `*`, `?`, reserved Windows names) are legal on macOS and Linux and are kept.
package enum FileNameSanitizer {
  /// Longest name most file systems accept, in bytes.
  package static let fileSystemMaximumBytes = 255
  /// The longest suffix Haul adds to a name: the state file's temporary copy, `NAME.haul.tmp`.
  package static let longestOwnSuffix = ".haul.tmp"
  /// Longest name returned, leaving room for Haul's suffixes (`.part`, `.haul`, `.haul.tmp`):
  /// a 255-byte name would download nowhere, since `NAME.part` could not be created.
  package static let maximumBytes = fileSystemMaximumBytes - longestOwnSuffix.utf8.count
  /// An extension longer than this is not worth keeping at the expense of the stem.
  package static let maximumExtensionBytes = 32

  /// The safe form of `name`, or nil when nothing usable remains.
  ///
  /// - Parameter keepingLeadingDots: keep a leading `.` (`.bashrc`), for names a person chose;
  ///   names from a server or a URL lose it.
  package static func sanitize(_ name: String, keepingLeadingDots: Bool = false) -> String? {
    var scalars = String.UnicodeScalarView()
    for scalar in name.unicodeScalars {
      if scalar == "/" || scalar == "\\" {
        // Only the last path component counts.
        scalars.removeAll(keepingCapacity: true)
      } else if !isDropped(scalar) {
        scalars.append(scalar)
      }
    }
    guard var result = trimmed(String(scalars), keepingLeadingDots: keepingLeadingDots) else { return nil }
    guard let fitted = truncated(result, toUTF8Bytes: maximumBytes, keepingLeadingDots: keepingLeadingDots)
    else { return nil }
    result = fitted
    if hasReservedSuffix(result) {
      let suffix = "-file"
      let limit = maximumBytes - suffix.utf8.count
      guard let shorter = truncated(result, toUTF8Bytes: limit, keepingLeadingDots: keepingLeadingDots) else {
        return nil
      }
      result = shorter + suffix
    }
    return result
  }

  /// A file name from the last segment of a URL path (`/files/report%202024.pdf` gives
  /// `report 2024.pdf`), or nil when it is empty (a path ending in `/`) or unusable.
  ///
  /// The segment is percent-decoded; if the decoded bytes are not UTF-8 the segment is kept
  /// percent-encoded rather than guessing a charset. A stray `?` or `#` and what follows are
  /// ignored in case the caller passed more than the path.
  package static func name(fromURLPath path: String) -> String? {
    var bytes = Array(path.utf8)
    if let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
      bytes.removeSubrange(end...)
    }
    let start = bytes.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0
    let segment = bytes[start...]
    guard !segment.isEmpty else { return nil }

    var decoded: [UInt8] = []
    decoded.reserveCapacity(segment.count)
    var index = segment.startIndex
    while index < segment.endIndex {
      if segment[index] == UInt8(ascii: "%"), segment.endIndex - index >= 3,
        let high = ByteScanner.hexValue(segment[index + 1]),
        let low = ByteScanner.hexValue(segment[index + 2])
      {
        decoded.append(high << 4 | low)
        index += 3
      } else {
        // A "%" without two hex digits is not an escape; keep it as written.
        decoded.append(segment[index])
        index += 1
      }
    }
    // The segment starts after an ASCII "/" so it is whole UTF-8 itself.
    let text = String(validating: decoded, as: UTF8.self) ?? String(decoding: segment, as: UTF8.self)
    return sanitize(text)
  }

  // MARK: - Private

  /// Characters that are invisible, reorder text, or mean something to terminals.
  private static func isDropped(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: true  // C0 (including NUL), DEL, C1
    case 0x202A...0x202E, 0x2066...0x2069: true  // bidi embeddings, overrides, isolates
    case 0x200E, 0x200F, 0x061C: true  // bidi marks (LRM, RLM, ALM)
    case 0x200B...0x200D, 0x2060, 0xFEFF: true  // zero-width space, (non-)joiner, word joiner, BOM
    default: false
    }
  }

  /// Strips leading whitespace and dots (unless kept) and trailing whitespace and dots; nil if
  /// nothing is left. A name made only of dots (`.`, `..`, `...`) therefore becomes nil.
  private static func trimmed(_ name: String, keepingLeadingDots: Bool) -> String? {
    var scalars = Substring(name).unicodeScalars
    while let first = scalars.first, first.properties.isWhitespace || (first == "." && !keepingLeadingDots) {
      scalars.removeFirst()
    }
    while let last = scalars.last, last.properties.isWhitespace || last == "." { scalars.removeLast() }
    return scalars.isEmpty ? nil : String(scalars)
  }

  /// Fits `name` into `limit` UTF-8 bytes by shortening the stem on a `Character` boundary,
  /// keeping a short extension. Nil when the stem would vanish.
  private static func truncated(_ name: String, toUTF8Bytes limit: Int, keepingLeadingDots: Bool) -> String? {
    guard name.utf8.count > limit else { return name }
    var stem = Substring(name)
    var fileExtension = Substring()
    if let dot = name.lastIndex(of: "."), dot != name.startIndex,
      name[dot...].utf8.count <= maximumExtensionBytes
    {
      stem = name[..<dot]
      fileExtension = name[dot...]
    }
    let budget = limit - fileExtension.utf8.count
    var used = 0
    var end = stem.startIndex
    for index in stem.indices {
      let next = stem.index(after: index)
      let size = stem.utf8.distance(from: index, to: next)
      if used + size > budget { break }
      used += size
      end = next
    }
    guard let shortStem = trimmed(String(stem[..<end]), keepingLeadingDots: keepingLeadingDots) else {
      return nil
    }
    return shortStem + fileExtension
  }

  private static func hasReservedSuffix(_ name: String) -> Bool {
    let tail = name.utf8.suffix(5).map(ByteScanner.lowercased)
    return tail.elementsEqual(".part".utf8) || tail.elementsEqual(".haul".utf8)
  }
}

extension FileNameSanitizer {
  /// The name a URL suggests: its last path segment, decoded and sanitized (query and fragment ignored).
  package static func name(fromURL url: String) -> String? {
    var rest = Substring(url)
    if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
    guard let slash = rest.firstIndex(of: "/") else { return nil }
    var path = rest[slash...]
    if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
    return name(fromURLPath: String(path))
  }

  /// A directory download's file name while the server has named none: `fallback`
  /// (`DownloadOptions.fallbackFileName`), else the URL's, else `index.html`. The file opened
  /// before the request, the command's collision check and a response without a name of its
  /// own all use it, so they agree.
  package static func directoryName(forURL url: String, fallback: String? = nil) -> String {
    fallback ?? name(fromURL: url) ?? "index.html"
  }
}
