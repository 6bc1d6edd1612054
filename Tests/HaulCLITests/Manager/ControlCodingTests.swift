import Foundation
import Haul
import Testing

@testable import HaulCLI

/// A download added through an owner's control socket reaches it with every secret the
/// command line gave: the owner keeps them in memory, as the command would have.
@Suite struct ControlCodingTests {
  @Test func secretsCrossTheSocketAndNothingElseChanges() throws {
    var options = DownloadOptions()
    options.headers = [("X-Trace", "t"), ("Authorization", "Bearer b")]
    options.network.username = "joe"
    options.network.password = "pw"
    options.network.cookies = "a=1; b=2"
    let request = DownloadRequest(
      url: "http://127.0.0.1:1/f", to: .directory(URL(fileURLWithPath: "/tmp")), options: options)
    let back = try ControlCoding.request(ControlCoding.json(request))
    #expect(back.options.network.username == "joe")
    #expect(back.options.network.password == "pw")
    #expect(back.options.network.cookies == "a=1; b=2")
    #expect(
      back.options.headers.map { "\($0.name): \($0.value)" } == ["X-Trace: t", "Authorization: Bearer b"])

    let plain = DownloadRequest(
      url: "http://127.0.0.1:1/f", to: .directory(URL(fileURLWithPath: "/tmp")), options: DownloadOptions())
    let json = ControlCoding.json(plain)
    #expect(json["password"] == nil && json["cookies"] == nil)
    let plainBack = try ControlCoding.request(json)
    #expect(plainBack.options.network.password == nil && plainBack.options.network.cookies == nil)
  }
}
