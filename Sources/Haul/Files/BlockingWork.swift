import Dispatch

/// Where work that waits on the disk runs when it is not a download's I/O lane (opening a
/// target, a download's final sync and rename, a read-ahead): a serial queue of its own, which
/// libdispatch serves with a thread of its own when none is idle (a queue with no target
/// "overcommits"). `DispatchQueue.global()` has only as many threads as CPUs: on two, sixteen
/// downloads' syncs took turns on two threads while the disk could take them all at once.
///
///     BlockingWork.run { FileIO.syncDirectory(directory) }
enum BlockingWork {
  static func run(_ work: @escaping @Sendable () -> Void) {
    DispatchQueue(label: "haul.blocking").async(execute: work)
  }

  /// The same, entering `group` until `work` is done.
  static func run(in group: DispatchGroup, _ work: @escaping @Sendable () -> Void) {
    DispatchQueue(label: "haul.blocking").async(group: group, execute: work)
  }
}
