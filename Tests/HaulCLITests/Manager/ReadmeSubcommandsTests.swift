import Foundation
import Haul
import Testing

@testable import HaulCLI

/// The README's subcommands section shows what the code prints: `haul ls`'s header and the
/// screen of `haul ui` (its keys line, and rows laid out as `UIScreen` lays them out).
@Suite("README subcommands")
struct ReadmeSubcommandsTests {
  static func section() throws -> [Substring] {
    let text = try ReadmeTests.readme()
    let start = try #require(text.range(of: "\n## The subcommands\n"), "no subcommands section")
    let rest = text[start.upperBound...]
    let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
    return rest[..<end].split(separator: "\n", omittingEmptySubsequences: false)
  }

  @Test func theListingHeaderIsTheTables() throws {
    let lines = try Self.section()
    let header = try #require(lines.first { $0.hasPrefix("ID ") })
    #expect(String(header) == ListTable(width: nil).header)
  }

  @Test func theScreenIsWhatUIScreenDraws() throws {
    let lines = try Self.section()
    #expect(lines.contains { $0 == UIScreen.keysHelp })
    let head = try #require(lines.first { $0.hasPrefix("  NAME ") })
    // The capture is 96 columns wide: its column heads are those of that width.
    let layout = UIScreen.Layout(width: 96 - 1 - 2)
    #expect(String(head) == "  " + layout.header.trimmingCharacters(in: .whitespaces))
    let paused = try #require(lines.first { $0.hasPrefix("  archlinux") })
    let item = UIScreen.Item(
      id: try #require(DownloadID("3256961681eb1828")), name: "archlinux-2026.12.01-x86_64.iso",
      state: .paused, bytes: 0, totalBytes: nil, bytesPerSecond: 0)
    #expect(String(paused) == "  " + layout.row(item).trimmingCharacters(in: .whitespaces))
  }
}
