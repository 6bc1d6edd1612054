import CCurl
import FoundationEssentials
import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// SFTP spoken as HTTP, as `FTPResponse` does for FTP: libcurl (libssh2) stats the file and reads
/// it, and its size and modification time become the head's size and Last-Modified, so SFTP
/// resumes with the engine's own decisions and validators. The server's host key is checked
/// against known_hosts first, as ssh and curl do. One per sftp:// transfer, on the event thread.
final class SFTPTransfer {
  /// The engine's range. libcurl is asked for the rest of the file from its first byte, since
  /// what it tells of a bounded range hides the file's size; the transfer stops at the range's end.
  let range: FTPResponse.Range?
  private let ifModifiedSince: Int64?
  /// `host` and `port` as the URL says them, for messages.
  private let host: String
  private let port: String
  /// The file the host key must be in; nil when the check is off (`--insecure`).
  private let knownHosts: String?
  /// Why the server's host key was refused, in words for the failure.
  private(set) var hostKeyProblem: String?

  static func handles(lowercasedURL: String) -> Bool { lowercasedURL.hasPrefix("sftp://") }

  init(request: TransferRequest, range: FTPResponse.Range?) {
    self.range = range
    ifModifiedSince = request.ifModifiedSince
    (host, port) = Self.hostAndPort(request.url)
    knownHosts =
      request.verifyTLS
      ? request.tls.sshKnownHosts ?? Self.home.map { $0 + "/.ssh/known_hosts" } ?? "~/.ssh/known_hosts" : nil
  }

  /// The body bytes the engine asked for; nil for the rest of the file.
  var bodyLimit: Int64? {
    guard let range, let last = range.last else { return nil }
    return last - range.first + 1
  }

  /// Sets the range, the host key check and the key pair.
  func configure(_ options: inout CurlOptionSetter, tls: TLSOptions) {
    if let range { options.set(Int32(CCURLOPT_RANGE), "\(range.first)-") }
    if let knownHosts {
      // libcurl reads the file (a missing one holds no keys) and asks the callback, which
      // accepts only a key the file holds for this host and port.
      options.set(Int32(CCURLOPT_SSH_KNOWNHOSTS), knownHosts)
      options.note(ccurl_easy_setopt_sshkey_callback(options.easy, sftpHostKeyCallback))
      // Unretained: the transfer keeps this object until its handle is cleaned up.
      let me = Unmanaged.passUnretained(self).toOpaque()
      options.note(ccurl_easy_setopt_pointer(options.easy, Int32(CCURLOPT_SSH_KEYDATA), me))
    }
    options.set(Int32(CCURLOPT_SSH_PRIVATE_KEYFILE), tls.clientKey ?? Self.defaultPrivateKey())
    options.set(Int32(CCURLOPT_SSH_PUBLIC_KEYFILE), tls.sshPublicKey)
    // libssh2 (1.10) closes the agent's socket twice when it cannot connect to it (an empty or
    // stale SSH_AUTH_SOCK); the second close may hit a file another thread has just opened.
    let agentSocket = getenv("SSH_AUTH_SOCK").map { String(cString: $0) }
    let agent = Self.agentAnswers(at: agentSocket) ? 0 : Int(CCURLSSH_AUTH_AGENT)
    options.set(Int32(CCURLOPT_SSH_AUTH_TYPES), Int(CCURLSSH_AUTH_ANY) & ~agent)
  }

  /// Whether `path` (`SSH_AUTH_SOCK`) names a socket that accepts a connection: an ssh-agent runs.
  static func agentAnswers(at path: String?) -> Bool {
    guard let path, !path.isEmpty else { return false }
    #if canImport(Glibc)
      let stream = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    #else
      let stream = SOCK_STREAM
    #endif
    // A path too long for a socket address (nil) is no agent: libssh2 would cut it short, fail
    // to connect and close its socket twice.
    let connected = UnixSocketAddress.with(path: path) { address, length in
      let descriptor = socket(AF_UNIX, stream, 0)
      guard descriptor >= 0 else { return false }
      defer { close(descriptor) }
      return connect(descriptor, address, length) == 0
    }
    return connected ?? false
  }

  /// The head for what libcurl learnt of the file. `pastTheEnd`: libcurl refused the range as
  /// starting beyond the file's end.
  func head(easy: OpaquePointer, pastTheEnd: Bool, finalURL: String) -> ResponseHead {
    var length: Int64 = -1
    _ = ccurl_easy_getinfo_off(easy, Int32(CCURLINFO_CONTENT_LENGTH_DOWNLOAD_T), &length)
    var time: Int64 = -1
    _ = ccurl_easy_getinfo_off(easy, Int32(CCURLINFO_FILETIME_T), &time)
    let modified = time >= 0 ? time : nil
    // libcurl has no time condition for SFTP: compared here as it would (not newer: unchanged).
    let unchanged = ifModifiedSince.map { since in modified.map { $0 <= since } ?? false } ?? false
    // The length libcurl tells is what is left from the range's first byte to the end.
    let size = length >= 0 && !pastTheEnd ? (range?.first ?? 0) + length : nil
    if range != nil, size == nil {
      // Past the end, an empty file, or a server without stat (libcurl then reads from byte 0
      // whatever was asked): nothing may be placed, and a 416 without a size restarts.
      var headers = HTTPHeaders()
      if let modified, let date = HTTPDate.format(modified) {
        headers.add(name: "Last-Modified", value: date)
      }
      return ResponseHead(status: 416, headers: headers, finalURL: finalURL)
    }
    let told = FTPResponse(range: range, size: size).head(
      modified: modified, unchanged: unchanged, finalURL: finalURL)
    return told ?? ResponseHead(status: 416, headers: HTTPHeaders(), finalURL: finalURL)
  }

  /// What the key callback answers: fine for the key known_hosts holds, else a refusal and why.
  fileprivate func judge(found: ccurl_khkey?, match: Int32) -> Int32 {
    if match == Int32(CCURLKHMATCH_OK) { return Int32(CCURLKHSTAT_FINE) }
    let file = knownHosts ?? ""
    let offered = found.map(Self.describe) ?? "a key"
    let place = port.isEmpty ? host : "\(host) port \(port)"
    if match == Int32(CCURLKHMATCH_MISMATCH) {
      hostKeyProblem =
        "SSH host key changed: \(place) offers \(offered), not the key \(file) holds for it; "
        + "the server's key was replaced, or someone is intercepting the connection"
    } else {
      let keyscan = "ssh-keyscan " + (port.isEmpty ? "" : "-p \(port) ") + host
      hostKeyProblem =
        "SSH host key unknown: \(place) offers \(offered), which is not in \(file); "
        + "check that fingerprint, then add the key (\(keyscan) >> \(file))"
    }
    return Int32(CCURLKHSTAT_REJECT)
  }

  /// `ED25519 key SHA256:…`, the fingerprint as OpenSSH shows it.
  private static func describe(_ key: ccurl_khkey) -> String {
    let type =
      switch Int(key.keytype) {
      case Int(CCURLKHTYPE_RSA1), Int(CCURLKHTYPE_RSA): "RSA"
      case Int(CCURLKHTYPE_DSS): "DSA"
      case Int(CCURLKHTYPE_ECDSA): "ECDSA"
      case Int(CCURLKHTYPE_ED25519): "ED25519"
      default: "a"
      }
    guard let bytes = key.key, key.len > 0, let digest = try? MessageDigest(.sha256) else {
      return "\(type) key"
    }
    digest.update(UnsafeRawBufferPointer(start: bytes, count: key.len))
    var text = Data(digest.finish()).base64EncodedString()
    while text.hasSuffix("=") { text.removeLast() }
    return "\(type) key SHA256:\(text)"
  }

  /// The URL's host (without brackets) and port ("" when the default).
  private static func hostAndPort(_ url: String) -> (String, String) {
    var authority = url.split(separator: "://", maxSplits: 1).last.map { Substring($0) } ?? ""
    authority = authority.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
    var port = ""
    if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
      port = String(authority[authority.index(after: colon)...])
      authority = authority[..<colon]
    }
    if authority.hasPrefix("["), authority.hasSuffix("]") { authority = authority.dropFirst().dropLast() }
    return (String(authority), port)
  }

  /// The user's home directory: `$HOME`, else the password database's.
  private static var home: String? {
    if let value = getenv("HOME"), value.pointee != 0 { return String(cString: value) }
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil,
      let directory = entry.pw_dir
    else { return nil }
    return String(cString: directory)
  }

  /// The first of `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa` that can be read; nil leaves
  /// libcurl's own guess (`~/.ssh/id_rsa`, `id_dsa`).
  private static func defaultPrivateKey() -> String? {
    guard let home else { return nil }
    return ["id_ed25519", "id_ecdsa", "id_rsa"].lazy.map { "\(home)/.ssh/\($0)" }.first {
      access($0, R_OK) == 0
    }
  }
}

private func sftpHostKeyCallback(
  _ easy: OpaquePointer?, _ known: UnsafePointer<ccurl_khkey>?, _ found: UnsafePointer<ccurl_khkey>?,
  _ match: Int32, _ user: UnsafeMutableRawPointer?
) -> Int32 {
  guard let user else { return Int32(CCURLKHSTAT_REJECT) }
  let transfer = Unmanaged<SFTPTransfer>.fromOpaque(user).takeUnretainedValue()
  return transfer.judge(found: found?.pointee, match: match)
}
