import FoundationEssentials
import Haul
import Testing

@testable import HaulCLI

/// `haul run`'s closing count: the catalog's downloads it handled, with those that left it
/// (paused, cancelled, removed) counted apart.
@Suite struct RunDisplayTests {
  static func id(_ digit: Character) -> DownloadID? { DownloadID(String(repeating: digit, count: 16)) }

  @Test func theClosingCountSaysWhatBecameOfEachDownload() throws {
    let output = OutputCapture()
    let reporter = BatchReporter(style: .plain, sink: output.sink, urls: [], now: { 0 })
    var display = RunDisplay(reporter: reporter, json: false, sink: output.sink) { id in
      ("http://h/\(id)", nil)
    }
    let (done, removed, paused) = (
      try #require(Self.id("a")), try #require(Self.id("b")), try #require(Self.id("c"))
    )
    let result = DownloadResult(
      file: URL(fileURLWithPath: "/tmp/a"), totalBytes: 1, bytesReceived: 1, resumedFrom: 0,
      finalURL: "http://h/a",
      wasAlreadyComplete: false, remoteChanged: false, duration: 0.1)
    for event: DownloadManagerEvent in [
      .started(done), .completed(done, result), .started(removed), .removed(removed), .forgotten(removed),
      .started(paused), .paused(paused),
    ] {
      display.handle(event)
    }
    #expect(display.finish(interrupted: false) == 0)
    #expect(output.stderr.hasSuffix("haul: 3 downloads: 1 done, 1 paused, 1 removed\n"), "\(output.stderr)")
  }
}
