import Foundation
import HaulTestSupport
import Testing

/// `haul URL URL…` and `haul -i FILE`: the real binary against the fault server.
@Suite struct BatchEndToEndTests {
  static func serve(_ count: Int, on server: TestServer, seed: UInt64) -> [[UInt8]] {
    (0..<count).map { index in
      let body = TestResource.random(size: 50_000 + index * 1_000, seed: seed + UInt64(index))
      server.setResource("/d/f\(index).bin", TestResource(body: body, etag: "\"\(index)\""))
      return body
    }
  }

  @Test func severalURLsAllArriveAndEachIsReported() async throws {
    let server = try TestServer()
    let bodies = Self.serve(6, on: server, seed: 80)
    let directory = try TemporaryDirectory()
    let missing = try await CommandEndToEndTests.run(
      ["-d", "out", server.url("/d/f0.bin"), server.url("/d/f1.bin")], in: directory.url)
    #expect(missing.status == 3)
    #expect(
      missing.stderr.components(separatedBy: "does not exist").count == 2, "said once: \(missing.stderr)")
    try FileManager.default.createDirectory(at: directory.file("out"), withIntermediateDirectories: false)
    let urls = (0..<6).map { server.url("/d/f\($0).bin") }
    let result = try await CommandEndToEndTests.run(["-j", "3", "-d", "out"] + urls, in: directory.url)
    #expect(result.status == 0, "\(result.stderr)")
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("out/f\(index).bin"), body)
      #expect(same, "f\(index).bin differs")
    }
    #expect(result.stderr.components(separatedBy: "✓ saved").count - 1 == 6)
    #expect(result.stderr.contains("haul: 6 URLs: 6 done"))
  }

  @Test func anInputFileWithAFailureKeepsTheOthersAndExitsWithIt() async throws {
    let server = try TestServer()
    let bodies = Self.serve(3, on: server, seed: 90)
    let directory = try TemporaryDirectory()
    let list = [
      "# three files and a missing one", server.url("/d/f0.bin"), "", server.url("/nope.bin"),
      "  " + server.url("/d/f1.bin") + "  ", server.url("/d/f2.bin"),
    ].joined(separator: "\n")
    try Data(list.utf8).write(to: directory.file("urls.txt"))
    let result = try await CommandEndToEndTests.run(["-i", "urls.txt"], in: directory.url)
    #expect(result.status == 8, "\(result.stderr)")
    #expect(result.stderr.contains("nope.bin") && result.stderr.contains("404"))
    #expect(result.stderr.contains("haul: 4 URLs: 3 done, 1 failed"))
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("f\(index).bin"), body)
      #expect(same, "f\(index).bin differs")
    }
    #expect(!FileManager.default.fileExists(atPath: directory.file("nope.bin").path))
    // A rerun finds every finished file complete and fetches nothing again.
    let sentBefore = server.bodyBytesSent(for: "/d/f0.bin")
    let again = try await CommandEndToEndTests.run(
      ["-q", server.url("/d/f0.bin"), server.url("/d/f1.bin")], in: directory.url)
    #expect(again.status == 0 && again.stderr.isEmpty)
    #expect(server.bodyBytesSent(for: "/d/f0.bin") == sentBefore)
  }

  @Test func jsonLinesNameTheirSource() async throws {
    let server = try TestServer()
    _ = Self.serve(2, on: server, seed: 100)
    let directory = try TemporaryDirectory()
    let urls = [server.url("/d/f0.bin"), server.url("/d/f1.bin")]
    let result = try await CommandEndToEndTests.run(["--json"] + urls, in: directory.url)
    #expect(result.status == 0)
    let events = try result.stdout.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    let completed = events.filter { $0["event"] as? String == "completed" }
    #expect(Set(completed.compactMap { $0["source"] as? String }) == Set(urls))
    #expect(events.allSatisfy { urls.contains($0["source"] as? String ?? "") })
  }

  @Test func ctrlCStopsEveryDownloadAndTheSameCommandResumes() async throws {
    let server = try TestServer()
    let bodies = (0..<3).map { TestResource.random(size: 2_000_000, seed: 110 + UInt64($0)) }
    for (index, body) in bodies.enumerated() {
      server.setResource(
        "/s\(index)", TestResource(body: body, etag: "\"s\"", faults: TestFaults(stallAfterBytes: 500_000)))
    }
    let directory = try TemporaryDirectory()
    let urls = (0..<3).map { server.url("/s\($0)") }
    let haul = try CommandEndToEndTests.HaulProcess(["-x", "1", "--timeout", "60"] + urls, in: directory.url)
    for index in 0..<3 {
      try await CommandEndToEndTests.waitForState(directory.file("s\(index).haul"), of: haul)
    }
    haul.signal(SIGINT)
    #expect(await haul.wait() == 130)
    #expect(haul.stderr.contains("run the same command again to resume"))
    for index in 0..<3 { server.updateFaults("/s\(index)") { $0.stallAfterBytes = nil } }
    let again = try await CommandEndToEndTests.run(["-x", "1"] + urls, in: directory.url)
    #expect(again.status == 0, "\(again.stderr)")
    for (index, body) in bodies.enumerated() {
      let same = CommandEndToEndTests.holds(directory.file("s\(index)"), body)
      #expect(same, "s\(index) differs")
    }
  }
}
