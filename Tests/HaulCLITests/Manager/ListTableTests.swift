import Foundation
import Haul
import Testing

@testable import HaulCLI

/// The pure parts of the subcommands: ids from prefixes, `haul ls`'s table.
@Suite("manager subcommand parts")
struct ListTableTests {
  static let known = ["2089b05ecca3d829", "2089c11100000000", "7c1e0d9a4f3b2e61"]

  private func resolve(_ given: [String]) throws(HaulError) -> [String] {
    var matcher = IDResolver.Matcher(try IDResolver(given))
    for id in Self.known { matcher.feed(id) }
    return try matcher.result()
  }

  @Test func idsResolveFromUniquePrefixes() throws {
    #expect(try resolve(["2089b"]) == ["2089b05ecca3d829"])
    #expect(try resolve(["7C1E", "2089b05ecca3d829", "7c1e0d"]) == ["7c1e0d9a4f3b2e61", "2089b05ecca3d829"])
    #expect(throws: HaulError.self) { try resolve(["2089"]) }
    #expect(throws: HaulError.self) { try resolve(["208"]) }
    #expect(throws: HaulError.self) { try resolve(["ffff"]) }
    #expect(throws: HaulError.self) { try resolve(["2089b05ecca3d829f"]) }
    #expect(throws: HaulError.self) { try resolve(["-2089"]) }
    do {
      _ = try resolve(["2089"])
    } catch {
      #expect(
        error.message
          == "2089 is ambiguous: several downloads' ids start with it (2089b05ecca3d829, 2089c11100000000)")
      #expect(error.hint == "give more of its digits")
      #expect(error.category == .invalidInput)
    }
  }

  static func item(
    _ name: String, state: String = "active", bytes: Int64 = 412 << 20, total: Int64? = 1 << 30
  )
    -> ListTable.Item
  {
    ListTable.Item(
      id: "2089b05ecca3d829", state: state, bytes: bytes, totalBytes: total, complete: state == "complete",
      speed: state == "active" ? 48.3 * 1_048_576 : nil, name: name)
  }

  @Test func theTableFitsTheWidthAndDropsColumnsWhenNarrow() {
    let wide = ListTable(width: 100)
    #expect(wide.header == "ID                STATE     DONE                 SIZE       SPEED  NAME")
    #expect(
      wide.row(Self.item("ubuntu.iso"))
        == "2089b05ecca3d829  active     40%   412 MiB / 1.00 GiB  48.3 MiB/s  ubuntu.iso")
    #expect(
      wide.row(Self.item("debian.iso", state: "complete", bytes: 1 << 30))
        == "2089b05ecca3d829  complete  100%             1.00 GiB           -  debian.iso")
    #expect(
      wide.row(Self.item("x", state: "queued", bytes: 0, total: nil))
        == "2089b05ecca3d829  queued       -                    -           -  x")
    let long = String(repeating: "n", count: 80) + ".iso"
    for width in [40, 60, 80, 100, 120] {
      let table = ListTable(width: width)
      let row = table.row(Self.item(long))
      #expect(row.count <= width - 1, "\(width): \(row)")
      #expect(width < 60 || row.hasSuffix(".iso"), "names are shortened in the middle: \(row)")
    }
    #expect(ListTable(width: 80).columns.contains(.speed))
    #expect(!ListTable(width: 75).columns.contains(.speed))
    #expect(!ListTable(width: 60).columns.contains(.size))
    #expect(ListTable(width: nil).row(Self.item(long)).hasSuffix(long), "no limit when not a terminal")
  }

  @Test func namesComeFromTheFileElseTheURL() {
    #expect(ListTable.name(file: "a.iso", url: "https://h/x") == "a.iso")
    #expect(ListTable.name(file: nil, url: "https://h/dir/b.iso?x=1") == "b.iso")
    #expect(ListTable.name(file: nil, url: "https://h/") == "https://h/")
    #expect(ListTable.name(file: nil, url: "https://h/dir/") == "https://h/dir/")
    #expect(ListTable.name(file: "bad\u{1B}[2J", url: "https://h/") == "bad?[2J")
  }
}
