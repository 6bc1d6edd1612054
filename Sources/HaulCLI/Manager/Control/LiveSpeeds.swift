import FoundationEssentials
import Haul
import HaulRPC

/// The speeds `haul ls` shows: the catalog records no speed (a download's rate lives only in
/// the process that runs it), so while a process owns the catalog, `ls` asks it on the control
/// socket (`aria2.tellActive`, which every kind of owner serves) for its active downloads'.
enum LiveSpeeds {
  /// How long `ls` waits for the owner's answer: `ls` works at any time, and a stopped owner
  /// (Ctrl-Z) answers nobody; a running one answers within milliseconds.
  static let patience = Duration.seconds(1)

  /// Bytes per second of each active download, as the owner measures them; empty when no
  /// process owns the catalog, or when it does not answer within `patience`.
  static func fetch(_ location: CatalogLocation) async -> [DownloadID: Double] {
    guard let client = ControlClient.connect(location, answerWithin: patience) else { return [:] }
    defer { client.hangUp() }
    let answer: JSONValue
    do throws(HaulError) {
      answer = try await client.call("aria2.tellActive", [["gid", "downloadSpeed"]])
    } catch {
      return [:]
    }
    return parse(answer)
  }

  /// The speeds in a `tellActive` answer (aria2's numbers are decimal strings).
  static func parse(_ answer: JSONValue) -> [DownloadID: Double] {
    var speeds: [DownloadID: Double] = [:]
    for entry in answer.array ?? [] {
      guard let id = entry["gid"]?.string.flatMap(DownloadID.init),
        let speed = entry["downloadSpeed"]?.string.flatMap(Double.init), speed.isFinite, speed >= 0
      else { continue }
      speeds[id] = speed
    }
    return speeds
  }
}
