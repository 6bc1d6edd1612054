import Testing

@testable import HaulCLI

/// A mistyped subcommand is named as such, rather than its options judged as a download's.
@Suite struct SubcommandTypoTests {
  @Test(arguments: [
    (["lss", "--catalog", "x.sqlite"], "ls"), (["pase", "abcd"], "pause"), (["deamon"], "daemon"),
    (["rnu", "-j", "4"], "run"),
  ])
  func aTypoNamesTheSubcommand(arguments: [String], meant: String) async {
    let output = OutputCapture()
    let status = await HaulCommand.run(arguments: arguments, sink: output.sink)
    #expect(status == 2)
    #expect(
      output.stderr
        == "haul: '\(arguments[0])' is neither a subcommand nor a URL (did you mean 'haul \(meant)'?)\n")
  }

  @Test(arguments: ["example", "Ls", "x.iso", "https://h/ls", "-o"])
  func otherWordsAreNotTakenForOne(word: String) {
    #expect(HaulCommand.closeSubcommand(word) == nil)
  }
}
