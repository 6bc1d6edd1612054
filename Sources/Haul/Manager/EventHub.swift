import FoundationEssentials

extension DownloadSnapshot {
  /// A complete download whose file was deleted or changed since is listed as failed, saying so.
  mutating func checkFinishedFile() {
    guard state == .complete, let file,
      let problem = ManagerFiles.finishedFileProblem(file.path, totalBytes: totalBytes)
    else { return }
    state = .failed
    error = problem
  }
}

/// Fans events out to every subscriber. Continuations are taken out under the lock and fed
/// after it is released.
final class EventHub: Sendable {
  private struct Subscribers {
    var next: UInt64 = 0
    var all: [UInt64: AsyncStream<DownloadManagerEvent>.Continuation] = [:]
    var finished = false
  }
  private let subscribers = Locked(Subscribers())

  func subscribe(bufferingNewest limit: Int) -> AsyncStream<DownloadManagerEvent> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: DownloadManagerEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
    let token: UInt64? = subscribers.withLock { subscribers in
      guard !subscribers.finished else { return nil }
      subscribers.next += 1
      subscribers.all[subscribers.next] = continuation
      return subscribers.next
    }
    guard let token else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.subscribers.withLock { $0.all.removeValue(forKey: token) }
    }
    return stream
  }

  func publish(_ events: [DownloadManagerEvent]) {
    guard !events.isEmpty else { return }
    let continuations = subscribers.withLock { Array($0.all.values) }
    for continuation in continuations {
      for event in events { continuation.yield(event) }
    }
  }

  /// Ends every subscription; later ones end at once.
  func finish() {
    let continuations = subscribers.withLock { subscribers in
      subscribers.finished = true
      defer { subscribers.all.removeAll() }
      return Array(subscribers.all.values)
    }
    for continuation in continuations { continuation.finish() }
  }
}
