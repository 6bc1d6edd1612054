import Haul

/// `haul --help`, built from the option table so that it cannot fall out of date.
enum HelpText {
  static var text: String {
    var lines = [
      "haul \(Haul.version) - resumable HTTP downloader",
      "",
      "Usage: haul [options] URL [URL...]",
      "",
      "Downloads URL into the current directory (or FILE, or DIR). An interrupted download",
      "keeps NAME.part and NAME.haul next to NAME; run the same command again to resume.",
      "",
      "Options:",
    ]
    let synopses = CommandLineOptions.table.map(\.synopsis)
    let column = (synopses.map(\.count).max() ?? 0) + 2
    for (spec, synopsis) in zip(CommandLineOptions.table, synopses) {
      lines.append("  " + synopsis + String(repeating: " ", count: column - synopsis.count) + spec.help)
    }
    lines += [
      "",
      "Options take values as '--opt VALUE', '--opt=VALUE', '-o VALUE' or '-oVALUE';",
      "'--' ends the options.",
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
