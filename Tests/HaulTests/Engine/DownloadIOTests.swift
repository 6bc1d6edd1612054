import Dispatch
import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// A download's file work: a checkpoint's sync runs beside the writes queued after it, yet the
/// states land in the order they were asked for, and a state never claims bytes the lane had
/// not written when its sync began.
@Suite struct DownloadIOTests {
  static func state(_ tag: String, held: Int64) -> ResumeState {
    var state = ResumeState(url: "http://127.0.0.1/f")
    state.etag = tag
    state.totalBytes = 4 << 20
    if held > 0 { state.ranges = [ByteRange(start: 0, end: held)] }
    return state
  }

  static func saved(_ io: DownloadIO) throws -> ResumeState? {
    guard case .success(let state)? = try StateJournal.load(from: io.statePath) else { return nil }
    return state
  }

  /// A commit asked for after a checkpoint replaces its state, though the checkpoint syncs
  /// first on its own thread and the commit does not.
  @Test func aCommitAfterACheckpointLandsAfterIt() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let io = DownloadIO(part: part, statePath: directory.file("f.haul").path)
    let bytes = [UInt8](repeating: 7, count: 64 * 1024)
    for round in 1...20 {
      let held = Int64(round * bytes.count)
      io.async {
        _ = bytes.withUnsafeBytes { try? part.write($0, at: held - Int64(bytes.count)) }
      }
      io.checkpoint(Self.state("checkpoint \(round)", held: held)) { _ in }
      io.commit(Self.state("commit \(round)", held: held), truncatingTo: nil) { _ in }
      io.drain()
      let tag = try Self.saved(io)?.etag
      #expect(tag == "commit \(round)")
    }
  }

  /// Checkpoints land in the order asked for, each reported once, the last one's state kept.
  @Test func checkpointsLandInOrder() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let io = DownloadIO(part: part, statePath: directory.file("f.haul").path)
    let done = Locked<[Int]>([])
    let bytes = [UInt8](repeating: 1, count: 4096)
    for round in 1...30 {
      io.async { _ = bytes.withUnsafeBytes { try? part.write($0, at: Int64((round - 1) * 4096)) } }
      io.checkpoint(Self.state("\(round)", held: Int64(round * 4096))) { result in
        if case .success = result { done.withLock { $0.append(round) } }
      }
    }
    io.drain()
    #expect(done.withLock { $0 } == Array(1...30))
    let state = try #require(try Self.saved(io))
    #expect(state.etag == "30")
    // The state never claims more than the file holds.
    #expect(state.contiguousBytes <= (try FileIO.readAll(path: part.path, limit: 1 << 20).get()).count)
  }

  /// A download's end runs on its lane (`DownloadRun.end`): waiting for the lane there, as
  /// `drain`, `commitNow` and `stop` do, runs at once after the work queued before, instead of
  /// waiting for itself forever; from another thread they still wait for the lane.
  @Test func waitsForTheLaneAskedOnTheLaneRunAtOnce() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let io = DownloadIO(part: part, statePath: directory.file("f.haul").path)
    let bytes = [UInt8](repeating: 3, count: 4096)
    io.async { _ = bytes.withUnsafeBytes { try? part.write($0, at: 0) } }
    let finished = DispatchSemaphore(value: 0)
    let tag = Locked<String?>(nil)
    io.async {
      io.drain()
      try? io.commitNow(Self.state("on the lane", held: 4096))
      tag.withLock { $0 = (try? Self.saved(io))??.etag }
      io.stop()
      finished.signal()
    }
    guard finished.wait(timeout: .now() + 30) == .success else {
      Issue.record("the lane waited for itself")
      return
    }
    #expect(tag.withLock { $0 } == "on the lane")
    // Stopped: a later state is refused, and a drain from here still waits for the lane.
    io.async { Thread.sleep(forTimeInterval: 0.05) }
    try io.commitNow(Self.state("after stop", held: 4096))
    io.drain()
    #expect(try Self.saved(io)?.etag == "on the lane")
  }

  /// A lane told no state file was there marks a new version on the `.part` file instead of
  /// looking for one; from its first saved state on, it knows there is one to remove.
  @Test func aLaneThatSawNoStateFileMarksThePartUntilItSavesOne() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    let io = DownloadIO(part: part, statePath: directory.file("f.haul").path, stateFileSeen: false)
    io.commit(Self.state("fresh", held: 0), truncatingTo: 0) { _ in }
    io.drain()
    #expect(!FileIO.exists(io.statePath))
    #expect(!io.mayHaveStateFile)
    #expect(DownloadIO.owner(ofPart: part.path) == "http://127.0.0.1/f")
    io.checkpoint(Self.state("first", held: 0)) { _ in }
    io.drain()
    #expect(io.mayHaveStateFile)
    #expect(try Self.saved(io)?.etag == "first")
    // A new version now replaces that file rather than leaving it behind the mark.
    io.commit(Self.state("second", held: 0), truncatingTo: 0) { _ in }
    io.drain()
    #expect(try Self.saved(io)?.etag == "second")
  }

  /// A lane that saw a state file (a leftover) replaces it with a new version's state.
  @Test func aLaneThatSawAStateFileReplacesIt() throws {
    let directory = try TemporaryDirectory()
    let part = try PartFile(path: directory.file("f.part").path)
    try StateJournal.save(Self.state("leftover", held: 0), to: directory.file("f.haul").path)
    let io = DownloadIO(part: part, statePath: directory.file("f.haul").path, stateFileSeen: true)
    io.commit(Self.state("fresh", held: 0), truncatingTo: 0) { _ in }
    io.drain()
    #expect(io.mayHaveStateFile)
    #expect(try Self.saved(io)?.etag == "fresh")
  }
}
