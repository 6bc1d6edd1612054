import Dispatch
import HaulCore

/// The one way events reach `Download.events`: in the order they were sent, never yielded under
/// a lock, and nothing after `.completed` or `.failed` (a timer's progress computed just before
/// the end may be sent just after it).
///
/// No thread of its own: the thread that sends into an idle gate yields (then whatever others
/// sent meanwhile) itself; a send while another thread yields only queues its event. A hop to
/// a serial queue per event woke a thread for each (three events a small file, times a
/// thousand files).
final class EventGate: Sendable {
  private let continuation: AsyncStream<DownloadEvent>.Continuation

  private struct Mailbox {
    var pending: [DownloadEvent] = []
    /// A thread is yielding `pending`; others only append.
    var draining = false
    /// `.completed` or `.failed` was sent, or `close`: later events are dropped.
    var closed = false
    /// `close` asked for the end of the stream, after `pending`.
    var finishing = false
    /// Signalled once the stream has ended, for a `close` that found another thread yielding.
    var ended: DispatchSemaphore?
  }

  private let mailbox = Locked(Mailbox())

  init(_ continuation: AsyncStream<DownloadEvent>.Continuation) { self.continuation = continuation }

  /// A `Download` released without running (nothing else holds its gate): its `events` end,
  /// so a loop over them does not wait forever.
  deinit { continuation.finish() }

  func send(_ event: DownloadEvent) {
    let drains = mailbox.withLock { box in
      guard !box.closed else { return false }
      box.pending.append(event)
      switch event {
      case .completed, .failed: box.closed = true
      default: break
      }
      return Self.becomeDrainer(&box)
    }
    if drains { drain() }
  }

  /// Sends `last` (unless the stream already ended) after every event sent before, then ends
  /// the stream; returns once it has. One `close` at a time (`run()` cannot overlap itself): a
  /// second one would replace the first's semaphore and leave it waiting.
  func close(with last: DownloadEvent?) {
    let (drains, ended): (Bool, DispatchSemaphore?) = mailbox.withLock { box in
      if let last, !box.closed { box.pending.append(last) }
      box.closed = true
      box.finishing = true
      if Self.becomeDrainer(&box) { return (true, nil) }
      let ended = DispatchSemaphore(value: 0)
      box.ended = ended
      return (false, ended)
    }
    if drains { drain() }
    // The other thread only yields (never waits on anything), so this wait is short.
    ended?.wait()
  }

  private static func becomeDrainer(_ box: inout Mailbox) -> Bool {
    guard !box.draining else { return false }
    box.draining = true
    return true
  }

  /// Yields what is pending until nothing is, then ends the stream if `close` asked.
  private func drain() {
    while true {
      let (batch, finish, ended): ([DownloadEvent], Bool, DispatchSemaphore?) = mailbox.withLock { box in
        guard box.pending.isEmpty else {
          defer { box.pending.removeAll(keepingCapacity: true) }
          return (box.pending, false, nil)
        }
        box.draining = false
        guard box.finishing else { return ([], false, nil) }
        box.finishing = false
        defer { box.ended = nil }
        return ([], true, box.ended)
      }
      guard batch.isEmpty else {
        for event in batch { continuation.yield(event) }
        continue
      }
      if finish {
        continuation.finish()
        ended?.signal()
      }
      return
    }
  }
}
