import Dispatch
import FoundationEssentials

/// Pause, resume and cancel requests from any thread, and the waits they cut short.
/// Continuations are taken out under the lock and resumed after it is released.
final class DownloadControl: Sendable {
  enum Request: Equatable, Sendable {
    case run
    case pause
    case cancel(keepPartial: Bool)
  }

  private struct Box {
    var request = Request.run
    /// Stops the transfers in flight (all connections of the current round).
    var stopTransfers: (@Sendable () -> Void)?
    var waiter: CheckedContinuation<Void, Never>?
    var waiterToken: UInt64 = 0
  }
  private let box = Locked(Box())

  var request: Request { box.withLock { $0.request } }

  func pause() { change { $0 == .run ? .pause : nil } }

  func resume() { change { $0 == .pause ? .run : nil } }

  func cancel(keepPartial: Bool) {
    change { if case .cancel = $0 { nil } else { .cancel(keepPartial: keepPartial) } }
  }

  private func change(_ next: (Request) -> Request?) {
    let (stop, waiter): ((@Sendable () -> Void)?, CheckedContinuation<Void, Never>?) = box.withLock { box in
      guard let request = next(box.request) else { return (nil, nil) }
      box.request = request
      let waiter = box.waiter
      box.waiter = nil
      return (request == .run ? nil : box.stopTransfers, waiter)
    }
    stop?()
    waiter?.resume()
  }

  /// Registers how to stop the transfers in flight; when a stop was requested meanwhile,
  /// calls it at once.
  func attach(stop: @escaping @Sendable () -> Void) {
    let stopNow = box.withLock { box in
      box.stopTransfers = stop
      return box.request != .run
    }
    if stopNow { stop() }
  }

  func detach() { box.withLock { $0.stopTransfers = nil } }

  /// Waits until the request is no longer `.pause`.
  func waitWhilePaused() async {
    while request == .pause {
      await wait(seconds: nil)
    }
  }

  /// Sleeps, returning early when pause/resume/cancel is requested.
  func sleep(seconds: Double) async {
    await wait(seconds: seconds)
  }

  private func wait(seconds: Double?) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let token: UInt64? = box.withLock { box in
        let stillWaiting = seconds == nil ? box.request == .pause : box.request == .run
        guard stillWaiting else { return nil }
        box.waiterToken &+= 1
        box.waiter = continuation
        return box.waiterToken
      }
      guard let token else {
        continuation.resume()
        return
      }
      if let seconds {
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { [self] in
          let waiter: CheckedContinuation<Void, Never>? = box.withLock { box in
            guard box.waiterToken == token, let waiter = box.waiter else { return nil }
            box.waiter = nil
            return waiter
          }
          waiter?.resume()
        }
      }
    }
  }
}
