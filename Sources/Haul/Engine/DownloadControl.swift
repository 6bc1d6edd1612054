import Foundation
import Synchronization

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
    var transfer: (any TransferHandle)?
    var waiter: CheckedContinuation<Void, Never>?
    var waiterToken: UInt64 = 0
  }
  private let box = Mutex(Box())

  var request: Request { box.withLock { $0.request } }

  func pause() { change { $0 == .run ? .pause : nil } }

  func resume() { change { $0 == .pause ? .run : nil } }

  func cancel(keepPartial: Bool) {
    change { if case .cancel = $0 { nil } else { .cancel(keepPartial: keepPartial) } }
  }

  private func change(_ next: (Request) -> Request?) {
    let (transfer, waiter): ((any TransferHandle)?, CheckedContinuation<Void, Never>?) = box.withLock { box in
      guard let request = next(box.request) else { return (nil, nil) }
      box.request = request
      let waiter = box.waiter
      box.waiter = nil
      return (request == .run ? nil : box.transfer, waiter)
    }
    transfer?.cancel()
    waiter?.resume()
  }

  /// Registers the running transfer so pause/cancel can stop it; false (and the transfer is
  /// cancelled) when a stop was requested meanwhile.
  func attach(_ transfer: any TransferHandle) -> Bool {
    let keep = box.withLock { box in
      guard box.request == .run else { return false }
      box.transfer = transfer
      return true
    }
    if !keep { transfer.cancel() }
    return keep
  }

  func detach() { box.withLock { $0.transfer = nil } }

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
