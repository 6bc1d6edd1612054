import Testing

@testable import Haul

/// The target's directory and name, and the sidecar paths, as the engine uses them.
@Suite struct DownloadPathsTests {
  @Test(arguments: [
    ("f", ".", "f"),
    ("/f", "/", "f"),
    ("a/b/f.iso", "a/b", "f.iso"),
    ("/tmp/x/f", "/tmp/x", "f"),
    ("a//f", "a", "f"),
  ])
  func directoryAndName(target: String, directory: String, name: String) {
    let paths = DownloadPaths(target: target)
    #expect(paths.directory == directory)
    #expect(paths.name == name)
    #expect(paths.part == target + ".part")
    #expect(paths.state == target + ".haul")
  }

  @Test(arguments: [("d", "d/f"), ("d/", "d/f"), ("/", "/f"), ("", "f"), (".", "./f")])
  func joinedWithADirectory(directory: String, target: String) {
    #expect(DownloadPaths(directory: directory, name: "f").target == target)
  }
}
