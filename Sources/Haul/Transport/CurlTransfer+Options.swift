import CCurl
import HaulCore

/// The easy-handle options a request asks for beyond the URL and headers: trust, credentials,
/// cookies, proxy, resolution, redirects, conditions. Event thread only, before the handle runs.
struct CurlOptionSetter {
  let easy: OpaquePointer
  /// The first failing option's code, CCURLE_OK while all succeed.
  private(set) var failed = Int32(CCURLE_OK)
  /// `--resolve`'s entries; libcurl keeps the list by pointer, so its owner frees it after the handle.
  private(set) var resolveList: UnsafeMutablePointer<ccurl_slist>?

  init(easy: OpaquePointer) { self.easy = easy }

  mutating func set(_ option: Int32, _ value: Int) {
    note(ccurl_easy_setopt_long(easy, option, value))
  }

  mutating func set(_ option: Int32, _ value: String?) {
    guard let value else { return }
    note(value.withCString { ccurl_easy_setopt_pointer(easy, option, $0) })
  }

  /// Keeps `code` when it is the first failure.
  mutating func note(_ code: Int32) {
    if code != Int32(CCURLE_OK), failed == Int32(CCURLE_OK) { failed = code }
  }

  /// Everything `TLSOptions` says; nil fields keep libcurl's defaults.
  mutating func apply(_ tls: TLSOptions) {
    set(Int32(CCURLOPT_CAINFO), tls.caFile)
    set(Int32(CCURLOPT_CAPATH), tls.caDirectory)
    set(Int32(CCURLOPT_SSLCERT), tls.clientCertificate)
    set(Int32(CCURLOPT_SSLKEY), tls.clientKey)
  }

  /// Everything `NetworkOptions` says, and the request's time condition. `cookies` is the store
  /// of the request's cookie file and jar, when libcurl could make one.
  mutating func apply(_ network: NetworkOptions, ifModifiedSince: Int64?, cookies: CurlCookieShare?) {
    set(Int32(CCURLOPT_MAXREDIRS), network.maxRedirects ?? -1)
    set(Int32(CCURLOPT_USERNAME), network.username)
    set(Int32(CCURLOPT_PASSWORD), network.password)
    if let netrc = network.netrcFile {
      set(Int32(CCURLOPT_NETRC), Int(CCURL_NETRC_OPTIONAL))
      if !netrc.isEmpty { set(Int32(CCURLOPT_NETRC_FILE), netrc) }
    }
    set(Int32(CCURLOPT_REFERER), network.referer)
    set(Int32(CCURLOPT_COOKIE), network.cookies)
    if let cookies,
      ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_SHARE), UnsafeRawPointer(cookies.pointer))
        == Int32(CCURLE_OK)
    {
      // The file is loaded once, and again when it changes; "" still turns the handle's cookie
      // engine on (libcurl sends nothing from a share without it).
      set(Int32(CCURLOPT_COOKIEFILE), cookies.fileToLoad() ?? "")
    } else {
      // A jar alone still turns the cookie engine on (""), so cookies set during redirects are kept.
      set(Int32(CCURLOPT_COOKIEFILE), network.cookieFile ?? (network.cookieJar != nil ? "" : nil))
    }
    set(Int32(CCURLOPT_COOKIEJAR), network.cookieJar)
    set(Int32(CCURLOPT_PROXY), network.proxy)
    set(Int32(CCURLOPT_NOPROXY), network.noProxy)
    switch network.ipVersion {
    case .any: break
    case .v4: set(Int32(CCURLOPT_IPRESOLVE), Int(CCURL_IPRESOLVE_V4))
    case .v6: set(Int32(CCURLOPT_IPRESOLVE), Int(CCURL_IPRESOLVE_V6))
    }
    for entry in network.resolve {
      guard let list = ccurl_slist_append(resolveList, entry) else {
        note(Int32(CCURLE_OUT_OF_MEMORY))
        break
      }
      resolveList = list
    }
    if let resolveList { note(ccurl_easy_setopt_pointer(easy, Int32(CCURLOPT_RESOLVE), resolveList)) }
    if let ifModifiedSince {
      set(Int32(CCURLOPT_TIMECONDITION), Int(CCURL_TIMECOND_IFMODSINCE))
      note(ccurl_easy_setopt_off(easy, Int32(CCURLOPT_TIMEVALUE_LARGE), ifModifiedSince))
    }
  }
}
