import Foundation
import Haul
import Testing

/// The README's manager section shows exactly the code below, which compiles here against the
/// public API (this file does not import Haul as testable; it is never run: it would fetch
/// example.com). Change both together.
@Suite("README: the download manager")
struct ReadmeManagerSnippetTests {
  static func snippet() async throws {
    // README begin
    // One catalog (an SQLite file) per app; a second process that opens it is told who has it.
    let manager = try DownloadManager(catalog: URL(fileURLWithPath: "downloads.sqlite"))
    // At launch, without the network: every download with its state and the bytes on disk.
    for download in manager.downloads() {
      print(download.id, download.state, download.fraction ?? 0, download.file?.path ?? download.url)
    }
    let events = manager.events()  // subscribe as often as needed: a UI, a log, an RPC server
    Task {
      for await event in events {
        switch event {
        case .progress(let id, let p): print(id, p.bytes, p.totalBytes ?? 0, p.bytesPerSecond)
        case .completed(let id, let result): print(id, "saved", result.file.path)
        case .failed(let id, let error): print(id, error.message, error.hint ?? "")
        default: break
        }
      }
    }
    let id = try await manager.add(
      "https://example.com/big.iso", to: .directory(URL(fileURLWithPath: ".")), paused: true)
    try await manager.resume(id)  // queues it; pause(id) stops it (bytes kept, paused across launches)
    // resume continues from what it holds; start(id) also moves it to the front. A download that
    // has already finished cannot be paused: pause throws, as aria2's does.
    try await manager.setMaxConcurrentDownloads(8)  // default 4; setOverallRateLimit(4 << 20) caps all
    await manager.waitUntilIdle()  // until nothing is left to run
    await manager.close()  // what still runs continues at the next launch
    // README end
  }

  @Test func theReadmeShowsTheCodeThatCompilesHere() throws {
    let source = try String(contentsOfFile: #filePath, encoding: .utf8)
    let lines = source.components(separatedBy: "\n")
    guard let begin = lines.firstIndex(of: "    // README begin"),
      let end = lines.firstIndex(of: "    // README end")
    else {
      Issue.record("the markers are missing")
      return
    }
    let compiled = lines[(begin + 1)..<end].map { $0.hasPrefix("    ") ? String($0.dropFirst(4)) : $0 }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let section = try #require(readme.components(separatedBy: "## The download manager\n").dropFirst().first)
    let block = try #require(section.components(separatedBy: "```swift\n").dropFirst().first)
    let shown = try #require(block.components(separatedBy: "\n```").first).components(separatedBy: "\n")
    #expect(Array(shown.prefix(3)) == ["import Foundation", "import Haul", ""])
    #expect(Array(shown.dropFirst(3)) == compiled, "README.md's manager snippet differs from this file's")
  }
}
