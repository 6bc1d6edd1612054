/// How requests reach the server and what they carry beyond headers, all done by libcurl:
/// credentials, cookies, proxy, name resolution, redirects, and a size limit.
///
/// ```swift
/// var options = DownloadOptions()
/// options.network.username = "joe"
/// options.network.password = ProcessInfo.processInfo.environment["PASS"]
/// options.network.proxy = "http://proxy.example:3128"
/// options.network.maxFileSize = 4 << 30     // refuse anything above 4 GiB
/// ```
///
/// Secrets are never written down: `Codable` leaves `password` and `cookies` out, so a
/// manager's catalog and state files never hold them.
public struct NetworkOptions: Sendable, Hashable, Codable {
  /// Which IP versions names resolve to.
  public enum IPVersion: String, Sendable, Hashable, Codable {
    case any, v4, v6
  }

  /// The user name for the server's login (HTTP Basic, FTP, SFTP). A user name in the URL is used
  /// when this is nil.
  public var username: String?
  /// The password for `username`. Never encoded.
  public var password: String?
  /// Read credentials from a netrc file when none are given: nil for none, "" for `~/.netrc`,
  /// else this file (curl's `--netrc`, `--netrc-file`).
  public var netrcFile: String?
  /// The Referer header.
  public var referer: String?
  /// Cookies to send, as a `Cookie` header's value (`name=value; name2=value2`). Never encoded.
  public var cookies: String?
  /// A cookie file (Netscape format or raw Set-Cookie lines) to send cookies from. Transfers
  /// with the same `cookieFile` and `cookieJar` share one cookie store, across connections and
  /// downloads; the file is read again whenever it changes.
  public var cookieFile: String?
  /// Where the cookies the server sets (and those sent) are written when each transfer ends:
  /// all of its store's, so downloads with the same cookie file and jar keep each other's cookies.
  public var cookieJar: String?
  /// The proxy (`http://host:port`, `socks5h://host`); nil leaves libcurl's default, which reads
  /// `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy`; "" uses no proxy at all.
  public var proxy: String?
  /// Hosts reached without the proxy: a comma-separated list of names, domains or addresses; "*" for all.
  public var noProxy: String?
  public var ipVersion: IPVersion = .any
  /// Fixed addresses, `HOST:PORT:ADDRESS` each, used instead of resolving (curl's `--resolve`).
  public var resolve: [String] = []
  /// Redirects followed before failing; 0 follows none, nil has no limit.
  public var maxRedirects: Int? = 10
  /// The largest file accepted, in bytes: a bigger one fails before its body is written (a server
  /// that does not say the size in advance is stopped when it sends more). nil for no limit.
  public var maxFileSize: Int64?

  public init() {}

  private enum CodingKeys: String, CodingKey {
    // `password` and `cookies` are deliberately absent: secrets are never written down.
    case username, netrcFile, referer, cookieFile, cookieJar, proxy, noProxy, ipVersion, resolve
    case maxRedirects, maxFileSize
  }

  /// Missing fields take the defaults, so records written before a field existed still load.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    username = try container.decodeIfPresent(String.self, forKey: .username)
    netrcFile = try container.decodeIfPresent(String.self, forKey: .netrcFile)
    referer = try container.decodeIfPresent(String.self, forKey: .referer)
    cookieFile = try container.decodeIfPresent(String.self, forKey: .cookieFile)
    cookieJar = try container.decodeIfPresent(String.self, forKey: .cookieJar)
    proxy = try container.decodeIfPresent(String.self, forKey: .proxy)
    noProxy = try container.decodeIfPresent(String.self, forKey: .noProxy)
    ipVersion = try container.decodeIfPresent(IPVersion.self, forKey: .ipVersion) ?? .any
    resolve = try container.decodeIfPresent([String].self, forKey: .resolve) ?? []
    maxRedirects = try container.decodeIfPresent(Int.self, forKey: .maxRedirects)
    maxFileSize = try container.decodeIfPresent(Int64.self, forKey: .maxFileSize)
  }
}
