/// Pause, resume and cancel requests from any thread: remembered, and forwarded to the run in
/// progress (whose machine decides what they mean at that moment).
final class DownloadControl: Sendable {
  enum Request: Equatable, Sendable {
    case run
    case pause
    case cancel(keepPartial: Bool)
  }

  private struct Box {
    var request = Request.run
    var run: DownloadRun?
  }
  private let box = Locked(Box())

  var request: Request { box.withLock { $0.request } }

  func pause() { change { $0 == .run ? .pause : nil }?.pause() }

  func resume() { change { $0 == .pause ? .run : nil }?.resume() }

  func cancel(keepPartial: Bool) {
    change { if case .cancel = $0 { nil } else { .cancel(keepPartial: keepPartial) } }?
      .cancel(keepPartial: keepPartial)
  }

  /// Sets the request if `next` allows it; returns the run to tell.
  private func change(_ next: (Request) -> Request?) -> DownloadRun? {
    box.withLock { box in
      guard let request = next(box.request) else { return nil }
      box.request = request
      return box.run
    }
  }

  /// Forwards requests to `run` from now on; returns the request standing now.
  func attach(_ run: DownloadRun) -> Request {
    box.withLock { box in
      box.run = run
      return box.request
    }
  }

  func detach() { box.withLock { $0.run = nil } }
}
