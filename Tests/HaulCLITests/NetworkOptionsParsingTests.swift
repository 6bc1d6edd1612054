import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulCLI

/// The curl/wget options: each reaches the library's `TLSOptions`/`NetworkOptions`, and bad input
/// is a usage error that names the option.
@Suite("Command-line parsing: trust, logins and requests")
struct NetworkOptionsParsingTests {
  private func options(_ arguments: [String]) throws -> CommandLineOptions {
    guard
      case .download(let options) = try CommandLineOptions.parse(arguments + ["https://example.com/a.iso"])
    else {
      Issue.record("expected a download request for \(arguments)")
      return CommandLineOptions()
    }
    return options
  }

  private func usageError(_ arguments: [String]) -> String? {
    do {
      _ = try CommandLineOptions.parse(arguments + ["https://example.com/a.iso"])
      return nil
    } catch {
      return error.message
    }
  }

  @Test func trustAndIdentityFiles() throws {
    let directory = try TemporaryDirectory()
    let ca = directory.file("ca.pem").path
    let key = directory.file("me.key").path
    try Data("x".utf8).write(to: directory.file("ca.pem"))
    try Data("x".utf8).write(to: directory.file("me.key"))
    let parsed = try options(["--cacert", ca, "--capath", directory.url.path, "-E", ca, "--key", key])
    let tls = parsed.downloadOptions.tls
    #expect(
      tls == TLSOptions(caFile: ca, caDirectory: directory.url.path, clientCertificate: ca, clientKey: key))

    #expect(
      usageError(["--cacert", directory.file("missing.pem").path])?.contains("--cacert: cannot read") == true)
    #expect(usageError(["--capath", ca]) == "--capath: '\(ca)' is not a directory")
    #expect(usageError(["--cert", directory.url.path])?.contains("is a directory, not a file") == true)
    #expect(usageError(["--key", ""]) == "--key: the file name is empty")
  }

  /// curl's order: explicit options win and then the environment is not read; else
  /// CURL_CA_BUNDLE, else SSL_CERT_DIR, else SSL_CERT_FILE.
  @Test func environmentTrustPrecedence() {
    let all = ["CURL_CA_BUNDLE": "/b.pem", "SSL_CERT_DIR": "/certs", "SSL_CERT_FILE": "/f.pem"]
    func trust(_ given: TLSOptions, _ environment: [String: String]) -> TLSOptions {
      CommandLineOptions.trust(given, environment: { environment[$0] })
    }
    #expect(trust(TLSOptions(), all) == TLSOptions(caFile: "/b.pem"))
    #expect(
      trust(TLSOptions(), ["SSL_CERT_DIR": "/certs", "SSL_CERT_FILE": "/f.pem"])
        == TLSOptions(caDirectory: "/certs"))
    #expect(
      trust(TLSOptions(), ["SSL_CERT_FILE": "/f.pem", "CURL_CA_BUNDLE": ""]) == TLSOptions(caFile: "/f.pem"))
    #expect(trust(TLSOptions(caFile: "/mine.pem"), all) == TLSOptions(caFile: "/mine.pem"))
    #expect(trust(TLSOptions(caDirectory: "/mine"), all) == TLSOptions(caDirectory: "/mine"))
    #expect(
      trust(TLSOptions(clientCertificate: "/c.pem", clientKey: "/k.pem"), ["SSL_CERT_FILE": "/f.pem"])
        == TLSOptions(caFile: "/f.pem", clientCertificate: "/c.pem", clientKey: "/k.pem"))
    #expect(trust(TLSOptions(), [:]) == TLSOptions())
  }

  @Test func userAndPassword() throws {
    let full = try options(["-u", "joe:se:cret"]).downloadOptions.network
    #expect(full.username == "joe" && full.password == "se:cret")
    let emptyPassword = try options(["--user=joe:"])
    #expect(emptyPassword.network.password == "" && !emptyPassword.asksForPassword)
    #expect(usageError(["-u", ":pw"])?.contains("the user name is empty") == true)

    var asking = try options(["-u", "joe"])
    #expect(asking.asksForPassword && asking.network.password == nil)
    var fromEnvironment = asking
    try Credentials.complete(
      &fromEnvironment, environment: { $0 == "HAUL_PASSWORD" ? "envpw" : nil }, prompt: { _ in nil })
    #expect(fromEnvironment.network.password == "envpw")
    var prompted: [String] = []
    try Credentials.complete(
      &asking, environment: { _ in nil },
      prompt: {
        prompted.append($0)
        return "typed"
      })
    #expect(asking.network.password == "typed" && prompted == ["Enter the password for user 'joe': "])
    var nowhere = try options(["-u", "joe"])
    #expect(throws: UsageError.self) {
      try Credentials.complete(&nowhere, environment: { _ in nil }, prompt: { _ in nil })
    }
  }

  @Test func netrc() throws {
    #expect(try options(["-n"]).network.netrcFile == "")
    let directory = try TemporaryDirectory()
    try Data("machine h login u password p\n".utf8).write(to: directory.file("netrc"))
    #expect(
      try options(["--netrc-file", directory.file("netrc").path]).network.netrcFile
        == directory.file("netrc").path)
    #expect(usageError(["--netrc-file", directory.file("none").path])?.contains("cannot read") == true)
  }

  @Test func requestFieldsAndCookies() throws {
    let directory = try TemporaryDirectory()
    try Data("".utf8).write(to: directory.file("cookies.txt"))
    let parsed = try options([
      "-A", "agent/1", "-e", "https://ref.example/", "-b", "a=1; b=2", "-c", directory.file("jar").path,
    ])
    let library = parsed.downloadOptions
    #expect(library.userAgent == "agent/1")
    #expect(library.network.referer == "https://ref.example/")
    #expect(library.network.cookies == "a=1; b=2" && library.network.cookieFile == nil)
    #expect(library.network.cookieJar == directory.file("jar").path)
    #expect(
      try options(["-b", directory.file("cookies.txt").path]).network.cookieFile
        == directory.file("cookies.txt").path)
    #expect(usageError(["-b", directory.file("nofile").path])?.contains("-b: cannot read") == true)
    #expect(usageError(["-A", "a\r\nX-Evil: 1"]) == "-A: the value contains control characters")
    #expect(usageError(["--referer", "x\ny"]) == "--referer: the value contains control characters")
    #expect(try options([]).downloadOptions.userAgent == DownloadOptions().userAgent)
    // wget's -c before a URL: refused, not a jar named like the URL and a URL lost.
    let wgetHabit = usageError(["-c", "http://h/x.iso"])
    #expect(
      wgetHabit?.contains("is a URL") == true && wgetHabit?.contains("--continue") == true,
      "\(wgetHabit ?? "")")
  }

  /// aria2c's and wget's `-c` before another option: refused, not a jar named `-x4` (created
  /// in the current directory) and the option dropped.
  @Test func cookieJarBeforeAnOption() throws {
    for habit in [["-c", "-x4"], ["-c", "-q"], ["-c", "--continue"]] {
      let message = usageError(habit)
      #expect(
        message?.contains("'\(habit[1])' is an option") == true && message?.contains("--continue") == true,
        "\(habit): \(message ?? "accepted")")
    }
    #expect(try options(["-c", "./-x4"]).network.cookieJar == "./-x4")
    #expect(try options(["-c", "-"]).network.cookieJar == "-")
  }

  @Test func connectionOptions() throws {
    let parsed = try options([
      "--proxy", "http://proxy:3128", "--noproxy", "localhost,.internal", "-6", "--resolve",
      "example.com:443:127.0.0.1", "--resolve", "b.example:80:[::1]", "--max-redirs", "3", "--max-filesize",
      "2M",
    ])
    let network = parsed.downloadOptions.network
    #expect(network.proxy == "http://proxy:3128" && network.noProxy == "localhost,.internal")
    #expect(network.ipVersion == .v6)
    #expect(network.resolve == ["example.com:443:127.0.0.1", "b.example:80:[::1]"])
    #expect(network.maxRedirects == 3 && network.maxFileSize == 2 << 20)
    #expect(try options(["-4"]).network.ipVersion == .v4)
    #expect(try options(["--proxy", ""]).network.proxy == "")
    #expect(try options(["--max-redirs", "-1"]).network.maxRedirects == nil)
    #expect(try options([]).network.maxRedirects == 10)

    for bad in ["example.com:443", "example.com:x:1.2.3.4", ":443:1.2.3.4", "h:99999:1.2.3.4", "h:80:"] {
      #expect(usageError(["--resolve", bad])?.contains("is not HOST:PORT:ADDRESS") == true, "\(bad)")
    }
    #expect(usageError(["--max-redirs", "-2"])?.contains("at least -1") == true)
    #expect(usageError(["--max-filesize", "0"])?.contains("is not a size") == true)
    #expect(usageError(["--max-filesize", "lots"])?.contains("is not a size") == true)
  }

  @Test func newerOnly() throws {
    #expect(try options(["-N"]).newerOnly)
    #expect(try options(["--newer-only"]).newerOnly)
    #expect(!(try options([]).newerOnly))
    #expect(try options(["-N"]).downloadOptions.remoteTime, "-N implies -R")
    #expect(try options(["-R"]).downloadOptions.remoteTime && !(try options(["-R"]).newerOnly))
    #expect(try options(["--remote-time"]).downloadOptions.remoteTime)
    #expect(!(try options([]).downloadOptions.remoteTime))
    #expect(
      usageError(["-N", "https://example.com/b.iso"])?.contains("--newer-only works with one URL") == true)
  }

  /// Short options combine as before (`-4qN`), and help lists every new option.
  @Test func combinedShortOptionsAndHelp() throws {
    let parsed = try options(["-4qN"])
    #expect(parsed.network.ipVersion == .v4 && parsed.quiet && parsed.newerOnly)
    let help = HelpText.text
    for flag in [
      "--cacert", "--capath", "--cert", "--key", "--user", "--netrc", "--netrc-file", "--user-agent",
      "--referer",
      "--cookie", "--cookie-jar", "--proxy", "--noproxy", "--ipv4", "--ipv6", "--resolve", "--max-redirs",
      "--max-filesize", "--newer-only",
    ] {
      #expect(help.contains(flag + " ") || help.contains(flag + "\n"), "\(flag) missing from help")
    }
    let shorts = CommandLineOptions.table.compactMap(\.short)
    #expect(Set(shorts).count == shorts.count, "a short option is used twice: \(shorts)")
  }
}
