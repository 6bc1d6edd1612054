import HaulCore

/// Runs of one `run()`: the first of the download's URL, and, when that link expires
/// mid-download (`ExpiredLink`), one of each fresh URL `DownloadOptions.refreshURL` hands out.
/// A fresh URL's run is a run of a URL that differs from the state's, so its first answer
/// must prove the same file before a byte is appended (`DownloadMachine.pendingProof`).
extension Download {
  func runRefreshing() async -> Result<DownloadResult, HaulError> {
    var url = self.url
    var refreshes = 0
    while true {
      let outcome = await runOnce(url)
      guard case .failure(let error) = outcome, let expired = error.underlying as? ExpiredLink else {
        return outcome
      }
      // A stream's bytes are gone: a new run would write them twice.
      guard !DownloadRun.streams(destination, options) else {
        return .failure(Self.expiredError(expired, error.category))
      }
      guard let refresh = options.refreshURL else {
        return .failure(Self.expiredError(expired, error.category))
      }
      guard ExpiredLink.mayRefresh(after: refreshes) else {
        return .failure(
          HaulError(
            error.category,
            "\(expired.description), again after \(refreshes) fresh URLs; the partial was kept",
            hint: LibraryWording.newURLToResume, underlying: expired))
      }
      let fresh: String?
      do {
        fresh = try await refresh(url)
      } catch {
        return .failure(
          HaulError(
            .generic, "\(expired.description), and asking for a fresh URL failed: \(error)",
            hint: LibraryWording.newURLToResume, underlying: error))
      }
      guard let fresh, !fresh.isEmpty else {
        return .failure(
          HaulError(
            error.category, "\(expired.description), and no fresh URL was given; the partial was kept",
            hint: LibraryWording.newURLToResume, underlying: expired))
      }
      do {
        url = try RequestURL.normalize(fresh)
      } catch {
        return .failure(
          HaulError(
            .invalidInput, "\(expired.description), and the fresh URL is unusable: \(error.message)",
            hint: LibraryWording.newURLToResume, underlying: error))
      }
      refreshes += 1
      if case .cancel = control.request {
        return .failure(
          HaulError(.interrupted, "cancelled while asking for a fresh URL; the partial was kept"))
      }
    }
  }

  /// One run of `url`; cancelling the task cancels it.
  private func runOnce(_ url: String) async -> Result<DownloadResult, HaulError> {
    let run = DownloadRun(
      url: url, destination: destination, options: options, ownRateLimit: ownRateLimit, transport: transport,
      control: control, emit: { [gate] in gate.send($0) }, minimumSplit: minimumSplit)
    let control = self.control
    let keep = options.keepPartialOnCancel
    return await withTaskCancellationHandler {
      do throws(HaulError) { return .success(try await run.execute()) } catch { return .failure(error) }
    } onCancel: {
      control.cancel(keepPartial: keep)
    }
  }

  /// An expired link with no fresh URL to be had.
  static func expiredError(_ expired: ExpiredLink, _ category: HaulError.Category) -> HaulError {
    HaulError(
      category, "\(expired.description); the partial was kept",
      hint: LibraryWording.newURLToResume, underlying: expired)
  }
}
