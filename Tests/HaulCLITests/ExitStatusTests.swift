import Haul
import Testing

@testable import HaulCLI

@Suite("Exit status")
struct ExitStatusTests {
  @Test(arguments: [
    (HaulError.Category.generic, Int32(1)), (.invalidInput, 2), (.fileSystem, 3), (.network, 4), (.tls, 5),
    (.authentication, 6), (.protocol, 7), (.server, 8), (.integrity, 9), (.interrupted, 130),
  ])
  func mapping(category: HaulError.Category, code: Int32) {
    #expect(ExitStatus.code(for: HaulError(category, "x")) == code)
  }

  @Test func anOwnerThatDidNotAnswerHasItsOwnStatus() {
    let error = HaulError(.generic, "x", underlying: ControlClient.Unanswered())
    #expect(ExitStatus.code(for: error) == ExitStatus.ownerUnanswered)
    #expect(ExitStatus.ownerUnanswered == 10)
  }

  @Test func constants() {
    #expect(ExitStatus.success == 0)
    #expect(ExitStatus.usage == 2)
    #expect(ExitStatus.interrupted == 130)
    #expect(ExitStatus.table.map(\.code) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 130])
  }

  @Test func helpAndVersionExitZero() async {
    let help = OutputCapture()
    #expect(await HaulCommand.run(arguments: ["--help"], sink: help.sink) == 0)
    #expect(help.stdout == HelpText.text)
    #expect(help.stderr.isEmpty)
    let version = OutputCapture()
    #expect(await HaulCommand.run(arguments: ["--version"], sink: version.sink) == 0)
    #expect(version.stdout.hasPrefix("haul \(HaulLibrary.version)\nlibcurl/"))
  }

  @Test func libraryRejectionsAreUsageErrors() async {
    // The library manages Range itself and refuses it as a header: invalid input, exit 2.
    let capture = OutputCapture()
    let status = await HaulCommand.run(
      arguments: ["-q", "-H", "Range: bytes=0-", "http://127.0.0.1:9/f"], sink: capture.sink)
    #expect(status == 2)
    #expect(capture.stderr.hasPrefix("haul: the Range header is managed by haul"))
    let json = OutputCapture()
    #expect(
      await HaulCommand.run(arguments: ["--json", "-HRange: x", "http://127.0.0.1:9/f"], sink: json.sink) == 2
    )
    #expect(json.stdout.hasPrefix("{\"event\":\"failed\",\"category\":\"invalid_input\",\"exit_code\":2,"))
    #expect(json.stdout.hasSuffix("}\n"))
  }
}
