import Foundation
import HaulTestSupport
import Testing

@testable import Haul

/// `--limit-rate` in automatic mode: connections that could only share the limit are not opened
/// (before: always 4 at the first step, 16 when the first window came out slow).
@Suite struct RateLimitConnectionsTests {
  @Test func automaticModeUnderALimitStaysFew() async throws {
    let server = try TestServer()
    let body = TestResource.random(size: 2_000_000, seed: 140)
    server.setResource("/f", TestResource(body: body, etag: "\"r\""))
    var options = DownloadTests.fastOptions()
    options.connections = nil
    options.rateLimit = 1_000_000
    let directory = try TemporaryDirectory()
    let outcome = try await DownloadTests.run(
      server.url("/f"), to: .file(directory.file("f")), options: options, minimumSplit: 64 << 10)
    #expect(outcome.error == nil)
    do {
      let same = DownloadTests.holds(directory.file("f"), body)
      #expect(same, "file bytes differ")
    }
    let most = outcome.events.compactMap { if case .progress(let p) = $0 { p.connections } else { nil } }
      .max()
    #expect((most ?? 0) <= 3, "connections: \(String(describing: most))")
    #expect(server.connectionCount <= 3, "\(server.connectionCount) connections")
  }
}
