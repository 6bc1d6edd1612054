import CCurl
import HaulCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One libcurl cookie store per cookie configuration (`-b FILE`, `-c FILE`), shared by every
/// transfer that uses it, as curl shares one among the transfers of a command and a browser among
/// its tabs. A cookie the first response sets goes out on the download's other connections, on its
/// retries and on the downloads after it, and the jar holds every cookie of them all.
///
/// Event thread only (`CurlTransport`): libcurl's share is used without lock callbacks for that
/// reason.
final class CurlCookieShares {
  /// The configuration a store belongs to: transfers with other files keep their cookies apart.
  struct Key: Hashable {
    let file: String?
    let jar: String?
  }

  /// A store no transfer has used for this long is freed (its cookies are in the jar, if any).
  static let idleLifetime: UInt64 = 600 * 1_000_000_000

  private var shares: [Key: CurlCookieShare] = [:]

  /// The store for `network`'s cookie file and jar; nil when it names neither (libcurl's cookie
  /// engine stays off, as curl's does) or when libcurl cannot make a share (each transfer then
  /// keeps its own cookies).
  func share(for network: NetworkOptions) -> CurlCookieShare? {
    guard network.cookieFile != nil || network.cookieJar != nil else { return nil }
    let key = Key(file: network.cookieFile, jar: network.cookieJar)
    if let share = shares[key] { return share }
    guard let share = CurlCookieShare(file: network.cookieFile, jar: network.cookieJar) else { return nil }
    shares[key] = share
    return share
  }

  /// Frees the stores no transfer has used for `idleLifetime`.
  func sweep(now: UInt64) {
    for (key, share) in shares where share.isIdle(since: now, for: Self.idleLifetime) {
      shares[key] = nil
    }
  }
}

/// A libcurl share that holds cookies, and what was last loaded into it. Event thread only.
final class CurlCookieShare {
  let pointer: OpaquePointer
  let file: String?
  let jar: String?
  /// Transfers whose easy handle uses the share (libcurl refuses to free it while one does).
  private var users = 0
  private var lastUsed: UInt64 = Monotonic.now()
  /// The cookie file as it was when last loaded; `.some(nil)` when it could not be read then.
  private var loadedFile: FileStamp??

  /// Which file and version was loaded: a file changed since (a user's new export, or the jar
  /// this store wrote) is loaded again, into the same store.
  struct FileStamp: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    init?(path: String) {
      var info = stat()
      guard stat(path, &info) == 0 else { return nil }
      device = UInt64(info.st_dev)
      inode = UInt64(info.st_ino)
      size = Int64(info.st_size)
      #if canImport(Glibc)
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
      #else
        modifiedSeconds = Int(info.st_mtimespec.tv_sec)
        modifiedNanoseconds = Int(info.st_mtimespec.tv_nsec)
      #endif
    }
  }

  init?(file: String?, jar: String?) {
    guard let pointer = ccurl_share_init() else { return nil }
    guard ccurl_share_data(pointer, Int32(CCURL_LOCK_DATA_COOKIE)) == Int32(CCURLSHE_OK) else {
      _ = ccurl_share_cleanup(pointer)
      return nil
    }
    self.pointer = pointer
    self.file = file
    self.jar = jar
  }

  deinit { _ = ccurl_share_cleanup(pointer) }

  /// The cookie file a transfer starting now must load into the store: the first time, and
  /// whenever the file changed since it was last loaded; nil otherwise.
  func fileToLoad() -> String? {
    guard let file else { return nil }
    let stamp = FileStamp(path: file)
    if let loadedFile, loadedFile == stamp { return nil }
    loadedFile = .some(stamp)
    return file
  }

  /// The jar was just written from this store. When it is also the cookie file (`-b F -c F`),
  /// that change is not loaded back: it holds nothing new, and a later Set-Cookie would be
  /// overwritten by the older value it holds.
  func jarWritten() {
    guard let file, file == jar, loadedFile != nil else { return }
    loadedFile = .some(FileStamp(path: file))
  }

  /// A transfer's easy handle uses the share from now on.
  func attach() { users += 1 }

  /// A transfer's easy handle was cleaned up.
  func detach() {
    users -= 1
    lastUsed = Monotonic.now()
  }

  func isIdle(since now: UInt64, for lifetime: UInt64) -> Bool {
    users == 0 && now > lastUsed && now - lastUsed >= lifetime
  }
}
