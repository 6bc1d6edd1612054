import CCrypto
import CCurl

extension HaulLibrary {
  /// The C libraries in use, as they name themselves: libcurl's version line (with its TLS
  /// library, zlib, …) and OpenSSL libcrypto's (digests), for `haul --version` and bug reports.
  public static var libraryVersions: [String] {
    [String(cString: ccurl_version()), String(cString: ccrypto_version())]
  }
}
