import Foundation
import HaulTestSupport
import Testing

@testable import Haul

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
}
