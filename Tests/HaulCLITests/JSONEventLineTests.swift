import Foundation
import Haul
import Testing

@testable import HaulCLI

@Suite("JSON event lines")
struct JSONEventLineTests {
  private func decode(_ line: String) throws -> [String: Any] {
    #expect(!line.contains("\n"))
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    return try #require(object as? [String: Any])
  }

  @Test func started() throws {
    let line = JSONEventLine.encode(.started(Fixtures.start(resumedFrom: 100, total: 456)))
    #expect(line.hasPrefix("{\"event\":\"started\","))
    let object = try decode(line)
    #expect(object["event"] as? String == "started")
    #expect(object["file"] as? String == "/tmp/dl/ubuntu.iso")
    #expect(object["url"] as? String == "https://example.com/ubuntu.iso")
    #expect((object["resumed_from"] as? NSNumber)?.int64Value == 100)
    #expect((object["total"] as? NSNumber)?.int64Value == 456)
    let unknown = try decode(JSONEventLine.encode(.started(Fixtures.start(total: nil))))
    #expect(unknown["total"] is NSNull)
  }

  @Test func progress() throws {
    let line = JSONEventLine.encode(
      .progress(Fixtures.progress(123, of: 456, speed: 1234.56, connections: 1)))
    #expect(
      line.hasPrefix("{\"event\":\"progress\",\"bytes\":123,\"total\":456,\"bytes_per_second\":1234.6,"))
    let object = try decode(line)
    #expect((object["bytes"] as? NSNumber)?.int64Value == 123)
    #expect((object["total"] as? NSNumber)?.int64Value == 456)
    #expect((object["bytes_per_second"] as? NSNumber)?.doubleValue == 1234.6)
    #expect((object["seconds_remaining"] as? NSNumber)?.doubleValue == 0.3)
    #expect((object["connections"] as? NSNumber)?.intValue == 1)
    let stalled = try decode(JSONEventLine.encode(.progress(Fixtures.progress(1, of: nil, speed: .nan))))
    #expect(stalled["total"] is NSNull)
    #expect(stalled["bytes_per_second"] is NSNull)
    #expect(stalled["seconds_remaining"] is NSNull)
    let big = try decode(JSONEventLine.encode(.progress(Fixtures.progress(Int64.max, of: Int64.max))))
    #expect((big["bytes"] as? NSNumber)?.int64Value == Int64.max)
  }

  @Test func pausedResumedRestarted() throws {
    #expect(
      try decode(JSONEventLine.encode(.paused(Fixtures.progress(5, of: 10))))["event"] as? String == "paused")
    #expect(JSONEventLine.encode(.resumed) == "{\"event\":\"resumed\"}")
    let restarted = try decode(JSONEventLine.encode(.restarted(reason: "the file changed")))
    #expect(restarted["event"] as? String == "restarted")
    #expect(restarted["reason"] as? String == "the file changed")
  }

  @Test func retrying() throws {
    let notice = Fixtures.retry(
      attempt: 2, max: 10, delay: 1.5, reason: HaulError(.network, "connection reset"))
    let object = try decode(JSONEventLine.encode(.retrying(notice)))
    #expect(object["event"] as? String == "retrying")
    #expect((object["attempt"] as? NSNumber)?.intValue == 2)
    #expect((object["max_attempts"] as? NSNumber)?.intValue == 10)
    #expect((object["delay"] as? NSNumber)?.doubleValue == 1.5)
    #expect(object["reason"] as? String == "connection reset")
    #expect(object["category"] as? String == "network")
  }

  @Test func completed() throws {
    let result = Fixtures.result(
      total: 456, received: 400, resumedFrom: 56, remoteChanged: false, duration: 1.2345)
    let object = try decode(JSONEventLine.encode(.completed(result)))
    #expect(object["event"] as? String == "completed")
    #expect(object["sha256"] is NSNull)
    let hashed = DownloadResult(
      file: result.file, totalBytes: 1, bytesReceived: 1, resumedFrom: 0, finalURL: "u",
      wasAlreadyComplete: false,
      remoteChanged: false, duration: 0, sha256: "00ff")
    #expect(try decode(JSONEventLine.encode(.completed(hashed)))["sha256"] as? String == "00ff")
    #expect(object["file"] as? String == "/tmp/dl/ubuntu.iso")
    #expect((object["bytes"] as? NSNumber)?.int64Value == 456)
    #expect((object["received"] as? NSNumber)?.int64Value == 400)
    #expect((object["resumed_from"] as? NSNumber)?.int64Value == 56)
    #expect(
      (object["seconds"] as? NSNumber)?.doubleValue == 1.235
        || (object["seconds"] as? NSNumber)?.doubleValue == 1.234)
    #expect(
      JSONEventLine.encode(.completed(result)).contains("\"already_complete\":false,\"remote_changed\":false")
    )
    let done = JSONEventLine.encode(.completed(Fixtures.result(alreadyComplete: true, remoteChanged: true)))
    #expect(done.contains("\"already_complete\":true,\"remote_changed\":true"))
  }

  @Test func failed() throws {
    let error = HaulError(.server, "the server answered 404 Not Found", hint: "check the URL")
    let object = try decode(JSONEventLine.encode(.failed(error)))
    #expect(object["event"] as? String == "failed")
    #expect(object["category"] as? String == "server")
    #expect((object["exit_code"] as? NSNumber)?.intValue == 8)
    #expect(object["message"] as? String == "the server answered 404 Not Found")
    #expect(object["hint"] as? String == "check the URL")
    let bare = try decode(JSONEventLine.encodeFailure(HaulError(.interrupted, "stopped")))
    #expect(bare["hint"] is NSNull)
    #expect((bare["exit_code"] as? NSNumber)?.intValue == 130)
  }

  @Test(arguments: [
    "plain", "quote \" and backslash \\", "new\nline\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}",
    "bell\u{07}back\u{08}ff\u{0C}",
    "ünïcødé 日本語 🚀", "line\u{2028}sep\u{2029}", "</script>", "",
  ])
  func oddStringsRoundTrip(text: String) throws {
    let line = JSONEventLine.encode(.restarted(reason: text))
    #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{0}"))
    #expect(try decode(line)["reason"] as? String == text)
  }

  @Test func escapes() {
    #expect(JSONEventLine.quote("a\"b\\c") == "\"a\\\"b\\\\c\"")
    #expect(JSONEventLine.quote("\n\t\u{1}") == "\"\\n\\t\\u0001\"")
    #expect(JSONEventLine.quote("é") == "\"é\"")
    #expect(JSONEventLine.quote("\u{2028}") == "\"\\u2028\"")
  }

  @Test func numbers() {
    #expect(JSONEventLine.text(of: .double(2)) == "2")
    #expect(JSONEventLine.text(of: .double(1.5)) == "1.5")
    #expect(JSONEventLine.text(of: .double(.infinity)) == "null")
    #expect(JSONEventLine.text(of: .double(-.nan)) == "null")
    #expect(JSONEventLine.text(of: .int(-3)) == "-3")
  }

  @Test(arguments: [
    (HaulError.Category.generic, "generic"), (.invalidInput, "invalid_input"), (.fileSystem, "file_system"),
    (.network, "network"), (.tls, "tls"), (.authentication, "authentication"), (.protocol, "protocol"),
    (.server, "server"), (.integrity, "integrity"), (.interrupted, "interrupted"),
  ])
  func categoryNames(category: HaulError.Category, name: String) {
    #expect(JSONEventLine.categoryName(category) == name)
  }
}
