import Foundation
import HaulTestSupport
import Testing

/// The hints the `haul` process prints fit how the file was named: no "instead of -o" when no
/// -o was given, and no -o at all for a download of several URLs (which refuse it).
@Suite("hints fit how the file was named")
struct HintWordingEndToEndTests {
  @Test func aDirectoryWhereTheURLsNameLeads() async throws {
    let server = try TestServer()
    server.setResource("/dd", TestResource(body: TestResource.random(size: 1000, seed: 200)))
    let directory = try TemporaryDirectory()
    try FileManager.default.createDirectory(at: directory.file("dd"), withIntermediateDirectories: false)
    let result = try await CommandEndToEndTests.run([server.url("/dd")], in: directory.url)
    #expect(result.status == 3, "\(result.stderr)")
    #expect(
      result.stderr.hasSuffix("haul: remove or rename that directory, or choose another name with -o\n"),
      "\(result.stderr)")
    let named = try await CommandEndToEndTests.run(["-o", "dd", server.url("/dd")], in: directory.url)
    #expect(named.status == 3, "\(named.stderr)")
    #expect(named.stderr.contains("save into it with -d instead of -o"), "\(named.stderr)")
  }

  /// Two URLs whose server names the same file: the second, on a rerun, finds the first's
  /// file, and is told of out=NAME, not of -o.
  @Test func twoURLsTheServerNamesAlike() async throws {
    let server = try TestServer()
    for (index, path) in ["/a", "/b"].enumerated() {
      server.setResource(
        path,
        TestResource(
          body: TestResource.random(size: 1000, seed: 201 + UInt64(index)), etag: "\"\(index)\"",
          contentDisposition: "attachment; filename=\"same.bin\""))
    }
    let directory = try TemporaryDirectory()
    let urls = [server.url("/a"), server.url("/b")]
    _ = try await CommandEndToEndTests.run(["-j", "1"] + urls, in: directory.url)
    let again = try await CommandEndToEndTests.run(["-j", "1"] + urls, in: directory.url)
    #expect(again.status == 3, "\(again.stderr)")
    #expect(
      again.stderr.contains("or out=NAME in an input file (-i) to choose another name"), "\(again.stderr)")
    #expect(!again.stderr.contains("-o "), "\(again.stderr)")
  }
}
