import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// The process's index of state files: a directory is read once, then follows this process's
/// own saves and removals.
@Suite struct StateFileIndexTests {
  @Test func readsADirectoryOnceThenFollowsThisProcesssStateFiles() throws {
    let directory = try TemporaryDirectory()
    let path = directory.url.path
    for name in ["a.haul", "b.txt", "b.part", ".haul"] {
      try Data("x".utf8).write(to: directory.file(name))
    }
    #expect(StateFileIndex.stateFiles(in: path) == [path + "/a.haul"])
    // Written by someone else after the read: not seen (the response's name finds it later).
    try Data("x".utf8).write(to: directory.file("c.haul"))
    #expect(StateFileIndex.stateFiles(in: path) == [path + "/a.haul"])
    try StateJournal.save(ResumeState(url: "http://127.0.0.1/d"), to: path + "/d.haul")
    #expect(StateFileIndex.stateFiles(in: path + "/") == [path + "/a.haul", path + "/d.haul"])
    try StateJournal.remove(at: path + "/a.haul")
    #expect(StateFileIndex.stateFiles(in: path) == [path + "/d.haul"])
    #expect(!FileManager.default.fileExists(atPath: path + "/a.haul"))
    // The public listing always reads the directory itself.
    #expect(SavedProgress.all(in: directory.url).map(\.url) == ["http://127.0.0.1/d"])
  }

  @Test func aSaveIntoADirectoryNotReadYetIsFoundByItsFirstRead() throws {
    let directory = try TemporaryDirectory()
    let path = directory.url.path
    try StateJournal.save(ResumeState(url: "http://127.0.0.1/e"), to: path + "/e.haul")
    #expect(StateFileIndex.stateFiles(in: path) == [path + "/e.haul"])
  }
}
