import Haul
import Testing

@testable import HaulDaemon

/// `tellStatus`'s `errorCode`: aria2's exit code closest to how a download ended.
@Suite struct Aria2ErrorCodeTests {
  static let cases: [(DownloadState, HaulError?, String)] = [
    (.complete, nil, "0"),
    (.removed, nil, "31"),
    (.failed, nil, "1"),
    (.failed, HaulError(.network, "the connection broke"), "6"),
    (.failed, HaulError(.server, "the server answered 404 Not Found"), "3"),
    (.failed, HaulError(.integrity, "the checksum does not match"), "32"),
    (
      .failed, HaulError(.fileSystem, "/d/a.iso already exists and was not downloaded by haul from this URL"),
      "13"
    ),
    (
      .failed,
      HaulError(
        .fileSystem, "the download needs 1.00 GiB but only 10.0 MiB are free on the target's file system"),
      "9"
    ),
    (.failed, HaulError(.fileSystem, "permission denied: /d/a.iso"), "17"),
  ]

  @Test(arguments: 0..<cases.count)
  func closestCode(_ index: Int) {
    let (state, error, code) = Self.cases[index]
    #expect(Aria2Status.errorCode(state: state, error: error) == code, "\(String(describing: error))")
  }
}
