import Foundation
import Haul
import HaulRPC
import Testing

@testable import HaulDaemon

@Suite struct Aria2OptionsTests {
  @Test func readsAria2sStringsAndAppliesThem() throws {
    let options = try Aria2Options.parse([
      "dir": "/tmp/x", "out": "a.iso", "split": "8", "max-connection-per-server": "4",
      "max-download-limit": "1M",
      "header": ["Authorization: Bearer t", "X-A:b"],
      "checksum": "sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "pause": "true", "max-tries": "0", "timeout": "20", "user-agent": "ua", "allow-overwrite": "true",
      "check-certificate": "false", "referer": "https://r/", "bt-max-peers": "9",
    ])
    var download = DownloadOptions()
    try options.apply(to: &download)
    #expect(options.directory == "/tmp/x")
    #expect(options.output == "a.iso")
    #expect(options.paused == true)
    #expect(download.connections == 4)
    #expect(download.rateLimit == 1 << 20)
    #expect(download.headers.map(\.name) == ["Authorization", "X-A", "Referer"])
    #expect(download.headers[1].value == "b")
    #expect(download.checksum != nil)
    #expect(download.maxAttemptsWithoutProgress == .max)
    #expect(download.stallTimeout == 20)
    #expect(download.userAgent == "ua")
    #expect(download.overwrite)
    #expect(!download.verifyTLS)
  }

  @Test func numbersAreAcceptedAndZeroLiftsTheLimit() throws {
    var download = DownloadOptions()
    download.rateLimit = 100
    try Aria2Options.parse(["split": 3, "max-download-limit": "0"]).apply(to: &download)
    #expect(download.connections == 3)
    #expect(download.rateLimit == nil)
  }

  @Test(arguments: [
    ("split", JSONValue.string("0")), ("split", "many"), ("max-download-limit", "fast"), ("pause", "yes"),
    ("timeout", "-1"), ("checksum", "crc=1"), ("dir", ""), ("header", 5),
  ])
  func badValuesAreAria2sError(name: String, value: JSONValue) {
    #expect(throws: RPCError.self) { try Aria2Options.parse(JSONObject([(name, value)])) }
  }

  /// More than 64 connections: the message names the limit and the reason, after aria2's words.
  @Test(arguments: ["split", "max-connection-per-server"])
  func tooManyConnectionsSayWhatTheLimitIs(name: String) {
    let expected = RPCError(
      "We encountered a problem while processing the option '--\(name)': haul opens at most 64 "
        + "connections to one file (asked for 65): more do not make a download faster, they only "
        + "load the server, and many servers refuse or block a client that opens that many")
    #expect(throws: expected) { try Aria2Options.parse(JSONObject([(name, JSONValue.string("65"))])) }
    #expect(throws: expected) { try Aria2Options.parse(JSONObject([(name, JSONValue.integer(65))])) }
    #expect((try? Aria2Options.parse(JSONObject([(name, JSONValue.string("64"))]))) != nil)
  }

  @Test func headersWithoutAColonAreRefused() throws {
    var download = DownloadOptions()
    #expect(throws: RPCError.self) { try Aria2Options.parse(["header": "nocolon"]).apply(to: &download) }
  }

  @Test func mergingKeepsTheDefaultsAndAddsHeaders() throws {
    let defaults = try Aria2Options.parse(["dir": "/d", "header": "A: 1", "split": "2"])
    let merged = try Aria2Options.parse(["header": "B: 2", "split": "5"]).merged(over: defaults)
    #expect(merged.directory == "/d")
    #expect(merged.headers == ["A: 1", "B: 2"])
    #expect(merged.split == 5)
  }
}

@Suite struct Aria2PaginationTests {
  // aria2's getPaginationRange, table-tested on [0, 1, 2, 3, 4].
  @Test(arguments: [
    (0, 2, [0, 1]), (3, 10, [3, 4]), (5, 1, []), (0, 0, []), (-1, 2, [4, 3]), (-2, 10, [3, 2, 1, 0]),
    (-6, 2, []), (-5, 1, [0]), (1, 3, [1, 2, 3]),
  ])
  func pages(offset: Int64, count: Int64, expected: [Int]) {
    #expect(Aria2Status.page([0, 1, 2, 3, 4], offset: offset, count: count) == expected)
  }
}

@Suite struct Aria2MaxTriesTests {
  // Haul's attempts (0: one attempt, `.max`: no limit), aria2's max-tries (0: no limit), and the
  // attempts writing that back gives (0 and 1 both mean one attempt).
  @Test(arguments: [(0, "1", 1), (1, "1", 1), (5, "5", 5), (Int.max, "0", Int.max)])
  func roundTrips(attempts: Int, tries: String, back: Int) throws {
    var options = DownloadOptions()
    options.maxAttemptsWithoutProgress = attempts
    let shown = Aria2Options.rendered(options, destination: .directory(URL(fileURLWithPath: "/d")))
    #expect(shown["max-tries"] == .string(tries))
    var written = DownloadOptions()
    try Aria2Options.parse(["max-tries": .string(tries)]).apply(to: &written)
    #expect(written.maxAttemptsWithoutProgress == back)
    #expect(max(1, written.maxAttemptsWithoutProgress) == max(1, attempts))
  }
}
