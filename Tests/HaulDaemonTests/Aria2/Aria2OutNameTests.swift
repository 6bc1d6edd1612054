import Foundation
import Haul
import HaulRPC
import Testing

@testable import HaulDaemon

/// `out` names a file inside `dir`, however a client spells it (QA reproduced writes outside).
@Suite struct Aria2OutNameTests {
  static let refused = [
    "../escape.bin", "../../qa/.hidden_profile", "sub/../../x2.bin", "..", ".", "sub/.", "a/../b",
    ".hidden", "sub/.hidden", "dir/", "a\\..\\b", "tab\there", String(repeating: "n", count: 300),
  ]

  @Test(arguments: refused)
  func namesOutsideTheDirectoryOrHiddenAreRefused(name: String) {
    #expect(throws: RPCError.self) { try Aria2Options.parse(["out": .string(name)]) }
  }

  @Test(arguments: ["a.iso", "sub/a.iso", "sub//deeper/a b.iso", "/etc/evil.bin", "v1.2..3.tar"])
  func namesInsideAreKept(name: String) throws {
    #expect(try Aria2Options.parse(["out": .string(name)]).output == name)
  }

  @Test func addUriMulticallAndChangeOptionsRefuseAnEscapingOut() async throws {
    let fixture = try await DaemonFixture()
    fixture.serve("/e.bin", size: 1_000, seed: 7)
    let url: JSONValue = [.string(fixture.server.url("/e.bin"))]
    let message =
      "We encountered a problem while processing the option '--out': '../escape.bin' does not name a file inside the directory"
    await #expect(throws: RPCError(message)) {
      try await fixture.call("aria2.addUri", [url, ["out": "../escape.bin"]])
    }
    // system.multicall takes no token of its own: posted as it is.
    let multicall: JSONValue = [
      "jsonrpc": "2.0", "id": 1, "method": "system.multicall",
      "params": [
        [
          [
            "methodName": "aria2.addUri",
            "params": [.string("token:\(DaemonFixture.secret)"), url, ["out": "sub/../../x2.bin"]],
          ]
        ]
      ],
    ]
    let results = try #require(try await post(port: fixture.port, multicall.serializedString).json)["result"]
    #expect(results?.array?.first?["code"] == 1)
    let gid = try await fixture.call("aria2.addUri", [url, ["pause": "true"]])
    await #expect(throws: RPCError.self) {
      try await fixture.call("aria2.changeOption", [gid, ["out": "../escape.bin"]])
    }
    await #expect(throws: RPCError.self) {
      try await fixture.call("aria2.changeGlobalOption", [["out": "../escape.bin"]])
    }
    #expect(try await fixture.call("aria2.tellWaiting", [0, 10]).array?.count == 1)
    await fixture.stop()
    let outside = fixture.downloads.deletingLastPathComponent()
    for name in ["escape.bin", "x2.bin"] {
      #expect(!FileManager.default.fileExists(atPath: outside.appendingPathComponent(name).path))
    }
  }
}
