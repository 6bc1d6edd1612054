import HaulTestSupport
import Testing

@testable import HaulCore

@Suite struct FileNameSanitizerTests {
  @Test(arguments: [
    ("report.pdf", "report.pdf"),
    ("naïve file.txt", "naïve file.txt"),
    ("日本語.txt", "日本語.txt"),
    ("😀.png", "😀.png"),
    // A server may not choose a hidden name (a login script in $HOME): leading dots go.
    (".bash_profile", "bash_profile"),
    ("..hidden", "hidden"),
    (". .profile", "profile"),
    ("dir/.ssh", "ssh"),
    ("a:b*c?.txt", "a:b*c?.txt"),
    // Only the last component survives.
    ("../../etc/passwd", "passwd"),
    ("..\\..\\x", "x"),
    ("/etc/passwd", "passwd"),
    ("C:\\x", "x"),
    ("C:\\Windows\\System32\\evil.dll", "evil.dll"),
    ("a/b\\c/d.txt", "d.txt"),
    // Invisible and control characters dropped.
    ("a\u{0}b.txt", "ab.txt"),
    ("line\nbreak\r.txt", "linebreak.txt"),
    ("tab\there", "tabhere"),
    ("bell\u{7}\u{7F}\u{85}\u{9F}.txt", "bell.txt"),
    ("\u{202E}gpj.exe", "gpj.exe"),
    ("invoice\u{202E}fdp.exe", "invoicefdp.exe"),
    ("a\u{2066}b\u{2069}c\u{200E}d\u{200F}e\u{061C}f", "abcdef"),
    ("zero\u{200B}width\u{200C}\u{200D}\u{2060}\u{FEFF}.txt", "zerowidth.txt"),
    // Trimming.
    ("  padded.txt  ", "padded.txt"),
    ("\u{3000}ideographic space\u{A0}", "ideographic space"),
    ("trailing.", "trailing"),
    ("trailing. . .", "trailing"),
    ("a..", "a"),
    // Haul's own suffixes.
    ("movie.part", "movie.part-file"),
    ("MOVIE.PART", "MOVIE.PART-file"),
    ("state.haul", "state.haul-file"),
    (".part", "part"),
    ("x.part", "x.part-file"),
    ("movie.partial", "movie.partial"),
    ("movie.part.", "movie.part-file"),
  ])
  func sanitizes(_ name: String, _ expected: String) {
    #expect(FileNameSanitizer.sanitize(name) == expected)
  }

  @Test(arguments: [
    "", " ", "   ", ".", "..", "...", ". .", "/", "\\", "a/", "../", "..\\", "../..", "/etc/", "\u{0}",
    "\u{0}\u{0}", "\u{202E}", "\u{200B}\u{FEFF}", "\n\t", "x/..", "x\\.", "x/ . ", "\u{1}..\u{2}",
  ])
  func rejectsUnusableNames(_ name: String) {
    #expect(FileNameSanitizer.sanitize(name) == nil)
    #expect(FileNameSanitizer.sanitize(name, keepingLeadingDots: true) == nil)
  }

  @Test(arguments: [
    (".bashrc", ".bashrc"), ("..hidden", "..hidden"), (" .x ", ".x"), ("a/.ssh", ".ssh"),
    (".part", ".part-file"),
  ])
  func keepsLeadingDotsOfChosenNames(_ name: String, _ expected: String) {
    #expect(FileNameSanitizer.sanitize(name, keepingLeadingDots: true) == expected)
  }

  @Test func truncatesLongNamesKeepingTheExtension() throws {
    let long = String(repeating: "a", count: 1000) + ".tar.gz"
    let result = try #require(FileNameSanitizer.sanitize(long))
    #expect(result.utf8.count == 246)
    #expect(result.hasSuffix("aaa.gz"))

    // Multi-byte characters are never split.
    let emoji = String(repeating: "😀", count: 100) + ".txt"
    let short = try #require(FileNameSanitizer.sanitize(emoji))
    #expect(short.utf8.count <= 246)
    #expect(short == String(repeating: "😀", count: 60) + ".txt")

    // An extension too long to be worth keeping is cut like the rest.
    let hugeExtension = "name." + String(repeating: "e", count: 1000)
    let cut = try #require(FileNameSanitizer.sanitize(hugeExtension))
    #expect(cut == "name." + String(repeating: "e", count: 241))

    // A truncation that ends on a dot or space is trimmed again.
    let dots = String(repeating: "a.", count: 200)
    let trimmed = try #require(FileNameSanitizer.sanitize(dots))
    #expect(trimmed.utf8.count <= 246 && !trimmed.hasSuffix("."))

    // One giant grapheme cluster cannot be split, so nothing usable remains.
    let cluster = "e" + String(repeating: "\u{301}", count: 200) + ".txt"
    #expect(FileNameSanitizer.sanitize(cluster) == nil)

    let exact = String(repeating: "b", count: 246)
    #expect(FileNameSanitizer.sanitize(exact) == exact)
    // A 255-byte name would leave no room for NAME.part and NAME.haul.tmp.
    #expect(FileNameSanitizer.sanitize(String(repeating: "b", count: 255)) == exact)

    let suffixed = String(repeating: "c", count: 300) + ".part"
    let safe = try #require(FileNameSanitizer.sanitize(suffixed))
    #expect(safe.utf8.count == 246 && safe.hasSuffix("c.part-file"))
  }

  @Test(
    arguments: [
      ("/files/report%202024.pdf", "report 2024.pdf"),
      ("/a/b/na%C3%AFve.txt", "naïve.txt"),
      ("report.pdf", "report.pdf"),
      ("/dl/file.zip?token=abc", "file.zip"),
      ("/dl/file.zip#frag", "file.zip"),
      ("/%FF%FE.bin", "%FF%FE.bin"),  // not UTF-8: keep the escapes
      ("/100%.txt", "100%.txt"),
      ("/a%zzb", "a%zzb"),
      ("/..%2F..%2Fetc%2Fpasswd", "passwd"),
      ("/..%5C..%5Cwin.ini", "win.ini"),
      ("/evil%00.txt", "evil.txt"),
      ("/%E2%80%AEgpj.exe", "gpj.exe"),
      ("/x/movie.part", "movie.part-file"),
      ("/.bash_profile", "bash_profile"),
      ("/%2Essh", "ssh"),
      ("/a/%20", nil),
      ("/", nil),
      ("", nil),
      ("/dir/", nil),
      ("/..", nil),
      ("/%2E%2E", nil),
      ("/.%2e", nil),
      ("/a/%2F", nil),
      ("/?x=1", nil),
    ] as [(String, String?)])
  func namesFromURLPaths(_ path: String, _ expected: String?) {
    #expect(FileNameSanitizer.name(fromURLPath: path) == expected)
  }

  @Test func survivesHostileInputs() {
    for text in FuzzInputs.hostile {
      if let name = FileNameSanitizer.sanitize(text) { Self.checkInvariants(name) }
      if let name = FileNameSanitizer.name(fromURLPath: text) { Self.checkInvariants(name) }
    }
    #expect(FileNameSanitizer.sanitize(String(repeating: "a", count: 1000))?.utf8.count == 246)
  }

  @Test func randomNamesAlwaysSatisfyInvariants() {
    let fragments = [
      ".", "..", "/", "\\", " ", ".part", ".haul", "\u{202E}", "\u{2066}", "\u{85}", "name", "%2F",
    ]
    let inputs = FuzzInputs.random(count: 4000, seed: 0x5A71, fragments: fragments)
    var generator = SplitMix64(seed: 0x255)
    for text in inputs {
      // Sometimes stretch the input past the length limit.
      let repeated = String(repeating: text, count: Int.random(in: 1...40, using: &generator))
      for candidate in [text, repeated] {
        if let name = FileNameSanitizer.sanitize(candidate) { Self.checkInvariants(name) }
        if let name = FileNameSanitizer.name(fromURLPath: candidate) { Self.checkInvariants(name) }
      }
    }
  }

  static func checkInvariants(_ name: String) {
    let bytes = Array(name.utf8)
    #expect(!bytes.isEmpty && bytes.count <= 246, "\(name.debugDescription)")
    #expect(!bytes.contains(UInt8(ascii: "/")) && !bytes.contains(UInt8(ascii: "\\")) && !bytes.contains(0))
    #expect(!bytes.allSatisfy { $0 == UInt8(ascii: ".") }, "\(name.debugDescription)")
    #expect(name != "." && name != "..")
    #expect(bytes.last != UInt8(ascii: "."))
    #expect(!name.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
    #expect(
      !name.unicodeScalars.contains {
        (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value)
      })
    let lower = name.lowercased()
    #expect(!lower.hasSuffix(".part") && !lower.hasSuffix(".haul"), "\(name.debugDescription)")
    #expect(name.unicodeScalars.first.map { !$0.properties.isWhitespace && $0 != "." } ?? false)
    #expect(name.unicodeScalars.last.map { !$0.properties.isWhitespace } ?? false)
  }
}
