import Haul
import HaulRPC

/// The methods about the daemon itself rather than its downloads.
package enum SessionMethods {
  /// The aria2 version whose RPC the daemon speaks: clients such as AriaNg enable options by it.
  package static let aria2Version = "1.36.0"

  /// `aria2.getVersion` and `aria2.getSessionInfo`.
  package static func methods(sessionID: String) -> [RPCMethod] {
    [
      RPCMethod("aria2.getVersion") { _ in
        [
          "version": .string(aria2Version), "enabledFeatures": ["HTTPS", "Message Digest"],
          "haul": .string(HaulLibrary.version),
        ]
      },
      RPCMethod("aria2.getSessionInfo") { _ in ["sessionId": .string(sessionID)] },
    ]
  }

  /// A new session id: 20 random bytes in hex, as aria2's.
  package static func newSessionID() -> String {
    RandomToken.hex(bytes: 20)
  }
}
