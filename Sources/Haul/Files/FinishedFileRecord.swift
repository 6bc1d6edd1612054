import CFileSystem

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A finished file remembers where it came from in an extended attribute, so a rerun can tell
/// "Haul made this from that URL, and this is its version" without a sidecar or a new download;
/// a second attribute, its seal (`FinishedFileSeal`), says what the file was when Haul
/// finished it, so that the rerun can tell whether it still is (`RerunVerification`).
enum FinishedFileRecord {
  static let attribute = "user.haul.state"

  /// Attaches the record to the `.part` file before its rename, so the final file always has it.
  static func attach(_ state: ResumeState, to part: PartFile) {
    part.setAttribute(attribute, StateJournal.encode(state))
  }

  /// Seals the file `part` refers to, after its rename (which changes its status-change time):
  /// its size, times and SHA-256. False when it could not be (no extended attributes there).
  @discardableResult
  static func seal(_ part: PartFile, sha256: String?) -> Bool {
    guard let status = part.status() else { return false }
    return part.setAttribute(FinishedFileSeal.attribute, makeSeal(status, sha256: sha256).encode())
  }

  /// The record on `path`, if it has one. Never through a link (`lstat`, `lgetxattr`): a link
  /// planted at the target has no record, even if what it points to has one. The size is not
  /// compared here: a finished file of another size is a modified one (`RerunVerification`).
  static func read(at path: String) -> ResumeState? {
    var info = stat()
    return read(at: path, seen: lstat(path, &info) == 0 ? info : nil)
  }

  /// `read(at:)` where the file was just looked at (`lstat`): `seen`, nil when nothing was there.
  static func read(at path: String, seen: stat?) -> ResumeState? {
    guard let info = seen, info.st_mode & S_IFMT == S_IFREG else { return nil }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    let count = buffer.withUnsafeMutableBytes { lgetxattr(path, attribute, $0.baseAddress, $0.count) }
    guard count > 0, let state = try? StateJournal.decode(Array(buffer.prefix(count))) else { return nil }
    return state
  }

  /// The seal for a file in `status`, now: the bound on its status-change time leaves the
  /// attribute's own write `FinishedFileSeal.writeAllowance` to happen in.
  static func makeSeal(_ status: FileStatus, sha256: String?) -> FinishedFileSeal {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let nanoseconds = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    return FinishedFileSeal(
      size: status.size, modified: status.modified,
      changedBy: max(nanoseconds, status.changed) + FinishedFileSeal.writeAllowance, sha256: sha256)
  }
}

/// A finished file opened to verify it (`O_NOFOLLOW`, a regular file, checked on the
/// descriptor): its status and seal, read through that descriptor, and its digests.
final class FinishedFile {
  let path: String
  let status: FileStatus
  /// Its seal, when it has a valid one.
  let seal: FinishedFileSeal?
  private let descriptor: Int32

  init(path: String) throws(LocalFileError) {
    let descriptor = SystemCall.retryingEINTR { open(path, O_RDONLY | SafeFile.openFlags | O_NONBLOCK) }
    guard descriptor >= 0 else { throw SafeFile.failure(path, call: "open", errno: errno) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else {
      let code = errno
      close(descriptor)
      throw LocalFileError(path, call: "fstat", errno: code)
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      throw LocalFileError(path, .notRegular(LocalFileError.kind(ofMode: info.st_mode)))
    }
    self.path = path
    self.descriptor = descriptor
    self.status = FileStatus(info)
    var buffer = [UInt8](repeating: 0, count: FinishedFileSeal.maximumSize + 1)
    let count = buffer.withUnsafeMutableBytes {
      fgetxattr(descriptor, FinishedFileSeal.attribute, $0.baseAddress, $0.count)
    }
    seal = count > 0 ? FinishedFileSeal.decode(Array(buffer.prefix(count))) : nil
  }

  deinit { close(descriptor) }

  /// The file's digests for `algorithms` (lower-case hex), read front to back.
  func digests(_ algorithms: Set<Checksum.Algorithm>) throws(HaulError) -> [Checksum.Algorithm: String] {
    var hashers: [(Checksum.Algorithm, MessageDigest)] = []
    for algorithm in algorithms.sorted(by: { $0.rawValue < $1.rawValue }) {
      hashers.append((algorithm, try MessageDigest(algorithm.digest)))
    }
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var offset: off_t = 0
    while true {
      let count = buffer.withUnsafeMutableBytes { bytes in
        SystemCall.retryingEINTR { pread(descriptor, bytes.baseAddress, bytes.count, offset) }
      }
      if count < 0 {
        let cause = SystemError("pread", errno: errno)
        throw HaulError(.fileSystem, FileErrorText.describe(cause, path: path), underlying: cause)
      }
      if count == 0 { break }
      buffer.withUnsafeBytes { bytes in
        for (_, hasher) in hashers { hasher.update(UnsafeRawBufferPointer(rebasing: bytes[0..<count])) }
      }
      offset += off_t(count)
    }
    var hex: [Checksum.Algorithm: String] = [:]
    for (algorithm, hasher) in hashers { hex[algorithm] = MessageDigest.hex(hasher.finish()) }
    return hex
  }

  /// Gives the file `unixTime` as its access and modification times (`-R` on a rerun).
  func setTimes(unixTime: Int64) throws(SystemError) {
    var times = [timespec(tv_sec: Int(unixTime), tv_nsec: 0), timespec(tv_sec: Int(unixTime), tv_nsec: 0)]
    _ = try SystemCall.retryingEINTR("futimens") { futimens(descriptor, &times) }
  }

  /// Records the file as it is now, with `sha256` (its bytes were just verified, or are as
  /// sealed before: nil when no SHA-256 was ever taken).
  @discardableResult
  func reseal(sha256: String?) -> Bool {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return false }
    let bytes = FinishedFileRecord.makeSeal(FileStatus(info), sha256: sha256).encode()
    return bytes.withUnsafeBytes {
      fsetxattr(descriptor, FinishedFileSeal.attribute, $0.baseAddress, $0.count, 0) == 0
    }
  }
}

extension FileStatus {
  init(_ info: stat) {
    #if canImport(Darwin)
      let (modified, changed) = (info.st_mtimespec, info.st_ctimespec)
    #else
      let (modified, changed) = (info.st_mtim, info.st_ctim)
    #endif
    self.init(
      size: Int64(info.st_size),
      modified: Int64(modified.tv_sec) * 1_000_000_000 + Int64(modified.tv_nsec),
      changed: Int64(changed.tv_sec) * 1_000_000_000 + Int64(changed.tv_nsec))
  }
}
