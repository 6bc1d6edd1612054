import Haul
import Testing

@testable import HaulCLI

/// `haul add --queue`: options a job cannot carry to its worker are refused, not dropped.
@Suite struct QueueAddOptionsTests {
  static func parsed(_ arguments: [String]) throws -> CommandLineOptions {
    guard case .download(let options) = try CommandLineOptions.parse(arguments + ["http://h/f.bin"]) else {
      throw HaulError(.invalidInput, "not a download")
    }
    return options
  }

  @Test(arguments: [
    (["-u", "joe:pw"], "-u"), (["--referer", "http://h/"], "--referer"), (["-b", "a=b"], "--cookie"),
    (["--max-filesize", "1K"], "--max-filesize"), (["-R"], "-R"), (["-N"], "-N"),
    (["--resolve", "h:80:127.0.0.1"], "--resolve"), (["--proxy", "http://p:3128"], "--proxy"),
    (["-4"], "-4/-6"), (["--continue"], "--continue"),
  ])
  func anUncarriedOptionIsRefused(arguments: [String], named: String) throws {
    let options = try Self.parsed(arguments)
    do {
      try QueueCommands.refuseUncarried(options)
      Issue.record("\(arguments) was accepted")
    } catch {
      #expect(error.category == .invalidInput)
      #expect(error.message.contains("cannot carry \(named)"), "\(error.message)")
    }
  }

  @Test func carriedOptionsPass() throws {
    let options = try Self.parsed([
      "-x", "4", "--limit-rate", "1M", "-H", "X-A: b", "-A", "agent", "--timeout", "5", "--retries", "2",
      "--overwrite", "--no-sha256", "--insecure",
    ])
    try QueueCommands.refuseUncarried(options)
  }
}
