/// Whom a download trusts and how it identifies itself over TLS (paths that libcurl hands to
/// OpenSSL) and over SSH for sftp:// (known hosts and key pair, handed to libssh2). nil fields
/// keep the defaults: the system's CA bundle, no client certificate, `~/.ssh/known_hosts`.
///
/// ```swift
/// var options = DownloadOptions()
/// options.tls.caFile = "/etc/company/ca.pem"          // trust a private CA
/// options.tls.clientCertificate = "/home/me/me.pem"   // mutual TLS
/// options.tls.clientKey = "/home/me/me.key"
/// ```
public struct TLSOptions: Sendable, Hashable, Codable {
  /// A PEM file of CA certificates to trust instead of the system's bundle (curl's `--cacert`).
  public var caFile: String?
  /// A directory of CA certificates named by subject hash (`openssl rehash DIR`; curl's `--capath`).
  public var caDirectory: String?
  /// The client certificate (PEM) for servers that ask for one (curl's `--cert`).
  public var clientCertificate: String?
  /// The client certificate's private key (PEM, unencrypted) when it is not in the certificate's file.
  /// For sftp:// the private key to log in with, as curl's `--key` (nil tries `~/.ssh/id_ed25519`,
  /// `id_ecdsa`, then `id_rsa`).
  public var clientKey: String?
  /// sftp://: the public key of `clientKey` (curl's `--pubkey`); nil derives it from the private key.
  public var sshPublicKey: String?
  /// sftp://: the known_hosts file (OpenSSH format) that must hold the server's host key; nil for
  /// `~/.ssh/known_hosts`. A host that is not in it, or offers another key, is refused unless
  /// `DownloadOptions.verifyTLS` is false.
  public var sshKnownHosts: String?

  public init(
    caFile: String? = nil, caDirectory: String? = nil, clientCertificate: String? = nil,
    clientKey: String? = nil, sshPublicKey: String? = nil, sshKnownHosts: String? = nil
  ) {
    self.caFile = caFile
    self.caDirectory = caDirectory
    self.clientCertificate = clientCertificate
    self.clientKey = clientKey
    self.sshPublicKey = sshPublicKey
    self.sshKnownHosts = sshKnownHosts
  }

  /// The trust the environment asks for, read as curl reads it: `CURL_CA_BUNDLE` (a CA file),
  /// else `SSL_CERT_DIR` (a directory), else `SSL_CERT_FILE` (a CA file). Empty values count as unset.
  ///
  /// Precedence (the command's, as curl's): `--cacert`/`--capath` first, and then the
  /// environment is not read at all; else these variables; else the system's bundle. The library
  /// reads no environment by itself: call this to opt in.
  public static func fromEnvironment(_ environment: [String: String]) -> TLSOptions {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    if let bundle = value("CURL_CA_BUNDLE") { return TLSOptions(caFile: bundle) }
    if let directory = value("SSL_CERT_DIR") { return TLSOptions(caDirectory: directory) }
    return TLSOptions(caFile: value("SSL_CERT_FILE"))
  }
}
