import CEvent
import Foundation
import Testing

@Suite struct EventABITests {
  @Test func declarationsWereCheckedAgainstLibeventHeadersInCI() {
    // CI installs libevent-dev; there abi_check.c's assertions must have been compiled in.
    guard ProcessInfo.processInfo.environment["CI"] == "true" else { return }
    #expect(cevent_abi_checked_against_headers() == 1)
  }

  @Test func libeventLoadsByItsSoname() {
    #expect(String(cString: cevent_version()).hasPrefix("2.1."))
  }

  /// A timer fires on the loop thread and its callback stops the loop: the bound callback
  /// types are the ones libevent calls.
  @Test func timerFiresAndBreaksTheLoop() throws {
    final class Fired { var events: [Int16] = [] }
    let base = try #require(cevent_base_new())
    defer { cevent_base_free(base) }
    let fired = Fired()
    let context = Unmanaged.passUnretained(fired).toOpaque()
    let record: cevent_callback = { _, events, context in
      guard let context else { return }
      Unmanaged<Fired>.fromOpaque(context).takeUnretainedValue().events.append(events)
    }
    let breakLoop: cevent_callback = { _, _, base in cevent_base_loopbreak(OpaquePointer(base)) }
    let timer = try #require(cevent_new(base, -1, 0, record, context))
    defer { cevent_free(timer) }
    let stop = try #require(cevent_new(base, -1, 0, breakLoop, UnsafeMutableRawPointer(base)))
    defer { cevent_free(stop) }
    var soon = timeval(tv_sec: 0, tv_usec: 1000)
    var later = timeval(tv_sec: 0, tv_usec: 20000)
    #expect(cevent_add(timer, &soon) == 0)
    #expect(cevent_add(stop, &later) == 0)
    #expect(cevent_base_run(base) == 0)
    #expect(fired.events == [Int16(CEVENT_EV_TIMEOUT)])
  }
}
