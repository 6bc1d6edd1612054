import Haul

/// `haul --help`, built from the option table so that it cannot fall out of date.
enum HelpText {
  static var text: String {
    var lines = [
      "haul \(HaulLibrary.version) - resumable HTTP downloader",
      "",
      "Usage: haul [options] URL [URL...]",
      "       haul worker --queue URL [-j N] [--name NAME]   (see haul worker --help)",
      "       haul queue --queue URL status|priority N ID…|limit N [ORIGIN]|retry ID…   (a fleet's queue)",
      "       haul daemon [--catalog FILE] [--rpc-listen-port N] (aria2's JSON-RPC; see haul daemon --help)",
    ]
    // The download manager's subcommands, on a catalog of downloads kept across runs.
    lines += ManagerCommand.all.map { "       " + $0.usage }
    lines += [
      "",
      "A subcommand is recognised only as the first argument (haul SUBCOMMAND --help tells more);",
      "a URL starts with its scheme (http://, ftp://, sftp://…): never taken for one.",
      "",
      "Downloads URL into the current directory (or FILE, or DIR). An interrupted download",
      "keeps NAME.part and NAME.haul next to NAME; run the same command again to resume.",
      "",
      "Options:",
    ]
    let synopses = CommandLineOptions.table.map(\.synopsis)
    let column = (synopses.map(\.count).max() ?? 0) + 2
    for (index, (spec, synopsis)) in zip(CommandLineOptions.table, synopses).enumerated() {
      if index == CommandLineOptions.generalTable.count {
        lines += ["", "Trust, logins and requests (as in curl; environment: see README):"]
      }
      lines.append("  " + synopsis + String(repeating: " ", count: column - synopsis.count) + spec.help)
    }
    lines += [
      "",
      "Options take values as '--opt VALUE', '--opt=VALUE', '-o VALUE' or '-oVALUE';",
      "'--' ends the options.",
      "",
      "Input files (-i FILE), aria2's format: one URL per line; '#' at the start of a line or",
      "after a blank begins a comment. Indented NAME=VALUE lines below a URL apply to it alone:",
    ]
    let names = InputFile.options.map(\.synopsis)
    let nameColumn = (names.map(\.count).max() ?? 0) + 2
    for (option, name) in zip(InputFile.options, names) {
      lines.append("  " + name + String(repeating: " ", count: nameColumn - name.count) + option.help)
    }
    lines += [
      "A mistake in the file stops the run before any download, naming the line.",
      "",
      "Examples:",
      "  haul https://example.com/big.iso",
      "      download into the current directory; run it again after a failure or Ctrl-C to resume",
      "  haul -o /tmp/big.iso --limit-rate 2M https://example.com/big.iso",
      "      save to /tmp/big.iso, receiving at most 2 MiB per second",
      "  haul -d downloads -H 'Authorization: Bearer TOKEN' https://example.com/report.pdf",
      "      send a header and save into ./downloads",
      "  haul -d isos -j 8 -i urls.txt",
      "      download every URL listed in urls.txt into ./isos, eight at a time",
      "  haul --json https://example.com/big.iso | jq -c 'select(.event != \"progress\")'",
      "      one JSON object per event on standard output",
      "",
      "Exit status:",
    ]
    for (code, meaning) in ExitStatus.table {
      let number = String(code)
      lines.append("  " + String(repeating: " ", count: 3 - number.count) + number + "  " + meaning)
    }
    return lines.joined(separator: "\n") + "\n"
  }
}
