import Foundation
import HaulTestSupport
import Testing

@testable import Haul

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite struct StateJournalTests {
  static func sample() -> ResumeState {
    var state = ResumeState(
      url: "http://h/a b", finalURL: "http://h/final", totalBytes: 1000, etag: "\"x\"", lastModified: nil)
    state.setContiguous(400)
    return state
  }

  @Test func roundTrips() throws {
    let state = Self.sample()
    #expect(try StateJournal.decode(StateJournal.encode(state)) == state)
  }

  /// The JSON line is written by hand; it must be what `JSONEncoder` writes (so state files
  /// stay as they were) and read back by `JSONDecoder`.
  @Test func theJSONIsWhatJSONEncoderWrites() throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    var full = ResumeState(
      url: "https://example.com/dir/a%20b?x=1&y=\"2\"", finalURL: "https://cdn.example/é/ü/文件.iso",
      totalBytes: 1 << 40, etag: "W/\"ab\\cd\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT",
      ranges: [ByteRange(start: 0, end: 10), ByteRange(start: 20, end: 1 << 39)],
      digests: ["sha-512": "AAAA/+==", "sha-256": "q83v", "md5": "x"])
    var states = [ResumeState(url: "u"), Self.sample(), full]
    full.url = "tab\there, newline\n, return\r, bell\u{07}, nul\u{00}, esc\u{1B}, \u{08}\u{0C}\u{7F}"
    full.digests = [:]
    states.append(full)
    for state in states {
      let expected = Array(try encoder.encode(state))
      let written = StateJournal.json(state)
      #expect(
        written == expected,
        "\(String(decoding: written, as: UTF8.self)) != \(String(decoding: expected, as: UTF8.self))")
    }
  }

  /// Random states (seeded): every one reads back equal.
  @Test func randomStatesRoundTrip() throws {
    var generator = SplitMix64(seed: 0x57A7E)
    let alphabet = Array("aé/\\\"\n\t\u{01}\u{1F} 文😀%".unicodeScalars)
    func text() -> String {
      var scalars = String.UnicodeScalarView()
      for _ in 0..<Int.random(in: 0...12, using: &generator) {
        scalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &generator)])
      }
      return String(scalars)
    }
    for _ in 0..<500 {
      var ranges: [ByteRange] = []
      var cursor: Int64 = 0
      for _ in 0..<Int.random(in: 0...4, using: &generator) {
        let start = cursor + Int64.random(in: 0...1000, using: &generator)
        let end = start + Int64.random(in: 1...1_000_000, using: &generator)
        ranges.append(ByteRange(start: start, end: end))
        cursor = end + 1
      }
      let state = ResumeState(
        url: text(), finalURL: Bool.random(using: &generator) ? text() : nil,
        totalBytes: Bool.random(using: &generator) ? cursor + 5 : nil,
        etag: Bool.random(using: &generator) ? text() : nil,
        lastModified: Bool.random(using: &generator) ? text() : nil, ranges: ranges,
        digests: Bool.random(using: &generator) ? [text(): text(), "sha-256": text()] : nil)
      #expect(try StateJournal.decode(StateJournal.encode(state)) == state)
    }
  }

  @Test func everyTruncationIsRejected() {
    let bytes = StateJournal.encode(Self.sample())
    for length in 0..<(bytes.count - 1) {
      #expect(throws: StateJournal.LoadError.self) { try StateJournal.decode(Array(bytes.prefix(length))) }
    }
  }

  @Test func everySingleBitFlipIsRejectedOrHarmless() {
    let bytes = StateJournal.encode(Self.sample())
    for index in bytes.indices {
      for bit in 0..<8 {
        var corrupt = bytes
        corrupt[index] ^= UInt8(1 << bit)
        // A flip can only survive where it changes nothing decoded (e.g. never); anything else must throw.
        if let state = try? StateJournal.decode(corrupt) { #expect(state == Self.sample()) }
      }
    }
  }

  @Test func otherVersionsAreNamed() {
    var text = String(decoding: StateJournal.encode(Self.sample()), as: UTF8.self)
    text = text.replacingOccurrences(of: "haul-state 1", with: "haul-state 2")
    #expect(throws: StateJournal.LoadError.unsupportedVersion(2)) {
      try StateJournal.decode(Array(text.utf8))
    }
  }

  @Test func inconsistentRangesAreRejected() {
    var state = Self.sample()
    state.ranges = [ByteRange(start: 0, end: 2000)]
    #expect(throws: StateJournal.LoadError.self) { try StateJournal.decode(StateJournal.encode(state)) }
    state.ranges = [ByteRange(start: 10, end: 5)]
    #expect(throws: StateJournal.LoadError.self) { try StateJournal.decode(StateJournal.encode(state)) }
    state.ranges = [ByteRange(start: 0, end: 10), ByteRange(start: 5, end: 20)]
    #expect(throws: StateJournal.LoadError.self) { try StateJournal.decode(StateJournal.encode(state)) }
  }

  @Test func saveReplacesAtomicallyAndLoadReadsBack() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.haul").path
    #expect(try StateJournal.load(from: path) == nil)
    try StateJournal.save(Self.sample(), to: path)
    #expect(try StateJournal.load(from: path) == .success(Self.sample()))
    #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
  }

  // MARK: - The state file is untrusted input, and its saves leave nothing behind

  /// The names in the directory of `path`.
  static func names(beside path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(
      atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path
    )
    .sorted()
  }

  /// A rename that fails (a directory is in the way) must not leave the temporary copy.
  @Test func aFailedSaveRemovesItsTemporaryFile() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.haul").path
    try FileManager.default.createDirectory(atPath: path + "/in-the-way", withIntermediateDirectories: true)
    #expect(throws: HaulError.self) { try StateJournal.save(Self.sample(), to: path) }
    #expect(try Self.names(beside: path) == ["x.haul"])
  }

  /// Disk full: the save fails, says so, leaves no temporary file, and the last state stays.
  @Test(.enabled(if: TmpfsDirectory.available, "mounting a tmpfs needs root; skipped"))
  func aSaveOnAFullDiskLeavesTheLastStateAndNoTemporaryFile() throws {
    let disk = try TmpfsDirectory(size: "64k")
    let path = disk.file("x.haul").path
    try StateJournal.save(Self.sample(), to: path)
    let filler = open(disk.file("filler").path, O_WRONLY | O_CREAT, 0o644)
    try #require(filler >= 0)
    let block = [UInt8](repeating: 0, count: 4096)
    while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
    close(filler)
    var next = Self.sample()
    next.setContiguous(900)
    let error = #expect(throws: HaulError.self) { try StateJournal.save(next, to: path) }
    #expect(error?.category == .fileSystem)
    #expect(error?.message.contains("the disk is full") == true, "\(String(describing: error))")
    #expect(try Self.names(beside: path) == ["filler", "x.haul"])
    #expect(try StateJournal.load(from: path) == .success(Self.sample()))
  }

  @Test func aSymbolicLinkAtTheStateFileIsRefusedNotRead() throws {
    let (directory, elsewhere) = (try TemporaryDirectory(), try TemporaryDirectory())
    let victim = try Victim(at: elsewhere.file("victim").path, bytes: StateJournal.encode(Self.sample()))
    let path = directory.file("x.haul").path
    try Planted.symbolicLink(at: path, to: victim.path)
    let error = #expect(throws: HaulError.self) { try StateJournal.load(from: path) }
    #expect(error?.message == "\(path) is a symbolic link; haul does not write through links")
    #expect(error?.category == .fileSystem)
    victim.expectUntouched()
  }

  /// A FIFO at the name once blocked the read forever.
  @Test func aFIFOAtTheStateFileIsRefusedWithoutWaiting() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.haul").path
    try #require(mkfifo(path, 0o644) == 0)
    let error = #expect(throws: HaulError.self) { try StateJournal.load(from: path) }
    #expect(error?.message == "\(path) is a FIFO, not a regular file; haul writes only regular files")
  }

  @Test func anOversizedStateFileIsUnusableNotAnError() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.haul").path
    try Data(repeating: 65, count: (1 << 20) + 1).write(to: URL(fileURLWithPath: path))
    guard case .failure(.corrupt)? = try StateJournal.load(from: path) else {
      Issue.record("an oversized state file should read as unusable")
      return
    }
  }
}
