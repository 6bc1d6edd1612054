/// What a display consumes: the downloads' events, and clock ticks so that a countdown ("retrying
/// in 4 s") moves while no event arrives.
enum DisplayInput<Event: Sendable>: Sendable {
  case event(Event)
  case tick

  /// `events`, with a `.tick` every `interval` seconds (none when nil) until they end.
  static func merging(_ events: AsyncStream<Event>, tickEvery interval: Double?) -> AsyncStream<DisplayInput>
  {
    let (stream, continuation) = AsyncStream.makeStream(of: DisplayInput.self, bufferingPolicy: .unbounded)
    let ticker: Task<Void, Never>? = interval.map { interval in
      Task {
        while !Task.isCancelled {
          try? await Task.sleep(for: .seconds(interval))
          continuation.yield(.tick)
        }
      }
    }
    continuation.onTermination = { _ in ticker?.cancel() }
    Task {
      for await event in events { continuation.yield(.event(event)) }
      continuation.finish()
    }
    return stream
  }
}
