import Testing

@testable import HaulCore

/// Fresh start, resume or refusal from what is on disk, as tables.
@Suite struct StartDecisionTests {
  static let url = "http://h/f"
  static let record = ResumeState(url: url, totalBytes: 10, ranges: [ByteRange(start: 0, end: 10)])

  @Test func beforeOpening() {
    typealias Decision = StartDecision.BeforeOpening
    func decide(_ finished: ResumeState?, target: Bool, part: Bool, overwrite: Bool = false) -> Decision {
      StartDecision.beforeOpening(
        target: "/d/f", finished: finished, targetExists: target, partExists: part, overwrite: overwrite)
    }
    #expect(decide(nil, target: false, part: false) == .openPart)
    #expect(decide(Self.record, target: true, part: false) == .checkFinished(Self.record))
    #expect(decide(Self.record, target: true, part: false, overwrite: true) == .openPart)
    // A finished file of ours with a partial beside it: the partial goes on.
    #expect(decide(Self.record, target: true, part: true) == .openPart)
    guard case .refuse(let error) = decide(nil, target: true, part: false) else {
      Issue.record("a file haul did not make was not refused")
      return
    }
    #expect(error.category == .fileSystem && error.message.contains("not downloaded by haul"))
    #expect(error.underlying is TargetExists, "the daemon's aria2 code 13 is told by this cause")
    #expect(decide(nil, target: true, part: false, overwrite: true) == .openPart)
    #expect(error.hint?.contains("continuePartial") == true)
    // `--continue`: another tool's partial at the target is adopted, unless a .part is there too.
    func continued(_ finished: ResumeState?, target: Bool, part: Bool) -> Decision {
      StartDecision.beforeOpening(
        target: "/d/f", finished: finished, targetExists: target, partExists: part, overwrite: false,
        continuePartial: true)
    }
    #expect(continued(nil, target: true, part: false) == .adoptTarget)
    #expect(continued(nil, target: false, part: true) == .openPart)
    #expect(continued(Self.record, target: true, part: false) == .checkFinished(Self.record))
    if case .refuse(let both) = continued(nil, target: true, part: true) {
      #expect(both.message.contains("both"))
    } else {
      Issue.record("a partial and a .part were not refused")
    }
  }

  @Test func afterOpening() {
    typealias Decision = StartDecision.AfterOpening
    func decide(_ saved: StartDecision.SavedState, existed: Bool = true, size: Int64, overwrite: Bool = false)
      -> Decision
    {
      StartDecision.afterOpening(
        url: Self.url, part: "/d/f.part", partExisted: existed, partSize: size, saved: saved,
        overwrite: overwrite)
    }
    let empty = ResumeState(url: Self.url)
    let saved = ResumeState(
      url: Self.url, totalBytes: 100, etag: "\"a\"",
      ranges: [ByteRange(start: 0, end: 30), ByteRange(start: 50, end: 80)])
    // Resume, never trusting more than the data file holds.
    var clamped = saved
    clamped.ranges = [ByteRange(start: 0, end: 30), ByteRange(start: 50, end: 60)]
    #expect(
      decide(.loaded(saved), size: 60) == .resume(clamped, truncate: false, replaceState: false, notice: nil))
    #expect(
      decide(.loaded(saved), size: 100) == .resume(saved, truncate: false, replaceState: false, notice: nil))
    // A state whose bytes are all gone: empty the data file.
    var none = saved
    none.ranges = []
    #expect(
      decide(.loaded(saved), size: 0) == .resume(none, truncate: false, replaceState: false, notice: nil))
    #expect(
      decide(.unreadable, size: 40)
        == .resume(empty, truncate: true, replaceState: true, notice: "the saved state was unreadable"))
    #expect(
      decide(.none, existed: false, size: 0)
        == .resume(empty, truncate: false, replaceState: false, notice: nil))
    #expect(
      decide(.none, size: 40, overwrite: true)
        == .resume(empty, truncate: true, replaceState: false, notice: nil))
    if case .refuse(let error) = decide(.none, size: 40) {
      #expect(error.message.contains("not made by haul"))
    } else {
      Issue.record("a .part haul did not make was not refused")
    }
    // Another URL's state (a moved or re-signed link): resumed as it is; the machine waits for
    // the new URL to prove it serves the same file before a byte is added.
    let other = ResumeState(url: "http://other/f")
    #expect(
      decide(.loaded(other), size: 40) == .resume(other, truncate: true, replaceState: false, notice: nil))
    var moved = saved
    moved.url = "http://other/f"
    #expect(
      decide(.loaded(moved), size: 100) == .resume(moved, truncate: false, replaceState: false, notice: nil))
    #expect(
      decide(.loaded(other), size: 40, overwrite: true)
        == .resume(empty, truncate: true, replaceState: true, notice: nil))
    // No state file yet, but the .part carries its download's mark (a crash before the first
    // checkpoint): start over without asking; another URL's mark is refused.
    func marked(_ owner: String) -> Decision {
      StartDecision.afterOpening(
        url: Self.url, part: "/d/f.part", partExisted: true, partSize: 40, saved: .none, partOwner: owner,
        overwrite: false)
    }
    #expect(marked(Self.url) == .resume(empty, truncate: true, replaceState: false, notice: nil))
    // Without the flag the refusal says how to continue.
    if case .refuse(let error) = decide(.none, size: 40) {
      #expect(error.hint?.contains("continuePartial") == true)
    }
    // `--continue`: a .part without its state (unmarked, or marked by this URL) is continued
    // from its size; another download's .part is still refused; --overwrite still replaces.
    func continued(owner: String?, size: Int64 = 40, overwrite: Bool = false) -> Decision {
      StartDecision.afterOpening(
        url: Self.url, part: "/d/f.part", partExisted: true, partSize: size, saved: .none, partOwner: owner,
        overwrite: overwrite, continuePartial: true)
    }
    let adopted = ResumeState(url: Self.url, ranges: [ByteRange(start: 0, end: 40)])
    #expect(continued(owner: nil) == .resume(adopted, truncate: false, replaceState: false, notice: nil))
    #expect(continued(owner: Self.url) == .resume(adopted, truncate: false, replaceState: false, notice: nil))
    #expect(
      continued(owner: nil, size: 0) == .resume(empty, truncate: false, replaceState: false, notice: nil))
    #expect(
      continued(owner: nil, overwrite: true)
        == .resume(empty, truncate: true, replaceState: false, notice: nil))
    if case .refuse = continued(owner: "http://other/f") {
    } else {
      Issue.record("another download's .part was continued")
    }
    if case .refuse(let error) = marked("http://other/f") {
      #expect(error.message.contains("belongs to another download (http://other/f)"))
    } else {
      Issue.record("another download's mark was not refused")
    }
  }
}
