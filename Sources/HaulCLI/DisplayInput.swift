/// What a display consumes: the downloads' events, and clock ticks so that a countdown ("retrying
/// in 4 s") moves while no event arrives.
enum DisplayInput<Event: Sendable>: Sendable {
  case event(Event)
  case tick

  /// A stream that producers yield `.event`s into themselves, with a `.tick` every `interval`
  /// seconds (none when nil) until it is finished. No task stands between a producer and the
  /// display: each one between them woke a thread per event.
  static func makeStream(
    tickEvery interval: Double?,
    bufferingPolicy: AsyncStream<DisplayInput>.Continuation.BufferingPolicy = .unbounded
  ) -> (stream: AsyncStream<DisplayInput>, continuation: AsyncStream<DisplayInput>.Continuation) {
    let (stream, continuation) = AsyncStream.makeStream(
      of: DisplayInput.self, bufferingPolicy: bufferingPolicy)
    let ticker: Task<Void, Never>? = interval.map { interval in
      Task {
        while !Task.isCancelled {
          try? await Task.sleep(for: .seconds(interval))
          continuation.yield(.tick)
        }
      }
    }
    continuation.onTermination = { _ in ticker?.cancel() }
    return (stream, continuation)
  }

  /// `events`, with a `.tick` every `interval` seconds (none when nil) until they end.
  static func merging(_ events: AsyncStream<Event>, tickEvery interval: Double?) -> AsyncStream<DisplayInput>
  {
    let (stream, continuation) = makeStream(tickEvery: interval)
    Task {
      for await event in events { continuation.yield(.event(event)) }
      continuation.finish()
    }
    return stream
  }
}
