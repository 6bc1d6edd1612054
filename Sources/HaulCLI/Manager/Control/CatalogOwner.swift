import FoundationEssentials
import Haul

/// A subcommand that owns the catalog and runs its downloads (`haul run`, `haul ui`): its
/// manager, and the control socket through which the other subcommands reach it.
struct CatalogOwner: Sendable {
  let manager: DownloadManager
  let control: ControlServer

  /// Opens the catalog at `location` for running (`-j`, `--limit-rate`; what was running or
  /// queued continues) and serves its control socket. `onShutdown` is what `aria2.shutdown` on
  /// the socket does (as a stop signal would); `directory` is where aria2.addUri puts files.
  /// - Throws: `HaulError`: something that is not haul's socket is at the socket's name (checked
  ///   before anything runs), or the catalog is refused or in use.
  static func open(
    _ location: CatalogLocation, options: CommandLineOptions, directory: String,
    onShutdown: @escaping @Sendable (DownloadManager) -> Void
  ) async throws(HaulError) -> CatalogOwner {
    var configuration = DownloadManager.Configuration()
    configuration.maxConcurrentDownloads = options.parallel ?? CommandLineOptions.defaultParallel
    configuration.overallRateLimit = options.rateLimit
    configuration.launch = .resume
    try ControlSocket.refuseForeign(location.controlSocket)
    let manager = try DownloadManager(
      catalog: URL(fileURLWithPath: location.path), configuration: configuration)
    do throws(HaulError) {
      let control = try ControlServer.start(location, manager: manager, directory: directory) { _ in
        onShutdown(manager)
      }
      return CatalogOwner(manager: manager, control: control)
    } catch {
      await manager.close()
      throw error
    }
  }

  /// Stops serving (answering what is being carried out), then closes the catalog (what still runs continues at the next launch).
  func close() async {
    control.stop()
    await control.drain()
    await manager.close()
  }
}
