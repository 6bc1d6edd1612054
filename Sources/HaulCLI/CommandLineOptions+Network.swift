import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// The options curl and wget users know: trust, credentials, request fields, cookies, proxy,
// resolution and limits. Every one becomes a libcurl option through `NetworkOptions`/`TLSOptions`.

extension CommandLineOptions {
  /// The table's second part, listed in help under its own heading.
  static let networkTable: [OptionSpec] = [
    .value(nil, "cacert", "FILE", "trust the CA certificates in FILE (PEM) instead of the system's") {
      options, value, spelling throws(UsageError) in
      options.tls.caFile = try readablePath(value, spelling: spelling)
      return .proceed
    },
    .value(nil, "capath", "DIR", "trust the CA certificates in DIR (named by hash: openssl rehash DIR)") {
      options, value, spelling throws(UsageError) in
      options.tls.caDirectory = try readablePath(value, spelling: spelling, directory: true)
      return .proceed
    },
    .value("E", "cert", "FILE", "present this client certificate (PEM; may hold the key too)") {
      options, value, spelling throws(UsageError) in
      options.tls.clientCertificate = try readablePath(value, spelling: spelling)
      return .proceed
    },
    .value(
      nil, "key", "FILE", "the private key: the client certificate's (PEM, unencrypted), or SFTP's login"
    ) {
      options, value, spelling throws(UsageError) in
      options.tls.clientKey = try readablePath(value, spelling: spelling)
      return .proceed
    },
    .value(nil, "pubkey", "FILE", "SFTP: the public key of --key (default: derived from the private key)") {
      options, value, spelling throws(UsageError) in
      options.tls.sshPublicKey = try readablePath(value, spelling: spelling)
      return .proceed
    },
    .value("u", "user", "USER[:PASS]", "log in as USER; without :PASS, $HAUL_PASSWORD or a prompt") {
      options, value, spelling throws(UsageError) in
      try options.setUser(value, spelling: spelling)
      return .proceed
    },
    .flag("n", "netrc", "take the login from ~/.netrc when none is given") {
      $0.network.netrcFile = $0.network.netrcFile ?? ""
      return .proceed
    },
    .value(nil, "netrc-file", "FILE", "take the login from FILE (netrc format)") {
      options, value, spelling throws(UsageError) in
      options.network.netrcFile = try readablePath(value, spelling: spelling)
      return .proceed
    },
    .value("A", "user-agent", "TEXT", "send TEXT as the User-Agent (default: haul/VERSION)") {
      options, value, spelling throws(UsageError) in
      options.userAgent = try fieldValue(value, spelling: spelling)
      return .proceed
    },
    .value("e", "referer", "URL", "send URL as the Referer") {
      options, value, spelling throws(UsageError) in
      options.network.referer = try fieldValue(value, spelling: spelling)
      return .proceed
    },
    .value("b", "cookie", "DATA|FILE", "send cookies: 'NAME=VALUE; …', or those of a cookie file") {
      options, value, spelling throws(UsageError) in
      if value.contains("=") {
        options.network.cookies = try fieldValue(value, spelling: spelling)
      } else {
        options.network.cookieFile = try readablePath(value, spelling: spelling)
      }
      return .proceed
    },
    .value("c", "cookie-jar", "FILE", "write the cookies (sent and set) to FILE at the end") {
      options, value, spelling throws(UsageError) in
      let jar = try nonEmpty(value, spelling: spelling, "the file name")
      // wget's -c (continue) before a URL would make the URL the jar's name and drop it.
      if jar.contains("://") {
        throw UsageError(
          "\(spelling) takes the cookie jar's file name, and '\(jar)' is a URL "
            + "(as in curl; to continue a partial download as wget -c does, use --continue)")
      }
      // aria2c's and wget's -c before another option (`-c -x4`) would make the option the
      // jar's name and drop it without a word. `-` alone is curl's standard output.
      if jar.count > 1, jar.hasPrefix("-") {
        throw UsageError(
          "\(spelling) takes the cookie jar's file name, and '\(jar)' is an option (as in curl; to "
            + "continue a partial download as wget -c does, use --continue; a jar named so: \(spelling) ./\(jar))"
        )
      }
      options.network.cookieJar = jar
      return .proceed
    },
    .value(nil, "proxy", "URL", "use this proxy ('': none; default: $https_proxy, $http_proxy, $all_proxy)") {
      options, value, _ in
      options.network.proxy = value
      return .proceed
    },
    .value(nil, "noproxy", "HOSTS", "reach these hosts directly (comma-separated; '*': all; or $no_proxy)") {
      options, value, _ in
      options.network.noProxy = value
      return .proceed
    },
    .flag("4", "ipv4", "resolve names to IPv4 addresses only") {
      $0.network.ipVersion = .v4
      return .proceed
    },
    .flag("6", "ipv6", "resolve names to IPv6 addresses only") {
      $0.network.ipVersion = .v6
      return .proceed
    },
    .value(nil, "resolve", "HOST:PORT:ADDR", "connect to ADDR for HOST:PORT (repeatable)") {
      options, value, spelling throws(UsageError) in
      options.network.resolve.append(try parseResolve(value, spelling: spelling))
      return .proceed
    },
    .value(nil, "max-redirs", "N", "follow at most N redirects; -1: no limit (default: 10)") {
      options, value, spelling throws(UsageError) in
      guard let count = Int(value), count >= -1, value.allSatisfy(\.isASCII) else {
        throw UsageError("\(spelling): '\(value)' is not a whole number of at least -1")
      }
      options.network.maxRedirects = count < 0 ? nil : count
      return .proceed
    },
    .value(nil, "max-filesize", "SIZE", "refuse a file larger than SIZE bytes (500K, 2G)") {
      options, value, spelling throws(UsageError) in
      guard let size = ByteQuantity.parse(value), size > 0 else {
        throw UsageError("\(spelling): '\(value)' is not a size (examples: 500K, 2G)")
      }
      options.network.maxFileSize = size
      return .proceed
    },
    .flag("N", "newer-only", "download only when the server's copy is newer than the local file (implies -R)")
    {
      $0.newerOnly = true
      return .proceed
    },
    .flag("R", "remote-time", "give the file the server's modification time, not the download's") {
      $0.remoteTime = true
      return .proceed
    },
  ]

  /// `-u USER:PASS` or `-u USER` (the password then comes from `$HAUL_PASSWORD` or a prompt).
  mutating func setUser(_ value: String, spelling: String) throws(UsageError) {
    let user: Substring
    if let colon = value.firstIndex(of: ":") {
      user = value[..<colon]
      network.password = String(value[value.index(after: colon)...])
      asksForPassword = false
    } else {
      user = Substring(value)
      network.password = nil
      asksForPassword = true
    }
    guard !user.isEmpty else {
      throw UsageError("\(spelling): the user name is empty (expected USER[:PASSWORD])")
    }
    network.username = String(user)
  }

  /// A file (or directory) the option reads, which must exist now: a typo is reported before
  /// any request instead of as a TLS or login failure later.
  static func readablePath(_ value: String, spelling: String, directory: Bool = false) throws(UsageError)
    -> String
  {
    _ = try nonEmpty(value, spelling: spelling, directory ? "the directory name" : "the file name")
    var info = stat()
    guard stat(value, &info) == 0, access(value, R_OK) == 0 else {
      throw UsageError("\(spelling): cannot read '\(value)' (\(String(cString: strerror(errno))))")
    }
    let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
    if directory, !isDirectory { throw UsageError("\(spelling): '\(value)' is not a directory") }
    if !directory, isDirectory { throw UsageError("\(spelling): '\(value)' is a directory, not a file") }
    return value
  }

  /// A value that goes into a request field: no control characters (they would split the request).
  static func fieldValue(_ value: String, spelling: String) throws(UsageError) -> String {
    guard value.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }) else {
      throw UsageError("\(spelling): the value contains control characters")
    }
    return value
  }

  /// `HOST:PORT:ADDRESS[,ADDRESS…]`, as curl's `--resolve` (an IPv6 address in brackets).
  static func parseResolve(_ value: String, spelling: String) throws(UsageError) -> String {
    let parts = value.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, !parts[2].isEmpty,
      let port = Int(parts[1]), (1...65535).contains(port), parts[1].allSatisfy(\.isASCII),
      !value.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
    else {
      throw UsageError(
        "\(spelling): '\(value)' is not HOST:PORT:ADDRESS (example: example.com:443:127.0.0.1)")
    }
    return value
  }

  /// The trust the options name, else the environment's (`TLSOptions.fromEnvironment`, curl's order).
  static func trust(_ given: TLSOptions, environment: (String) -> String?) -> TLSOptions {
    guard given.caFile == nil, given.caDirectory == nil else { return given }
    var names: [String: String] = [:]
    for name in ["CURL_CA_BUNDLE", "SSL_CERT_DIR", "SSL_CERT_FILE"] { names[name] = environment(name) }
    let environment = TLSOptions.fromEnvironment(names)
    var trust = given
    trust.caFile = environment.caFile
    trust.caDirectory = environment.caDirectory
    return trust
  }

  /// The process's environment variable `name`.
  static func environmentValue(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
