import Dispatch

/// One PostgreSQL connection behind an actor whose jobs run on a dispatch queue of its own: libpq
/// blocks, and a blocked call must never hold one of Swift's few cooperative threads. The actor
/// owns the connection (only its queue touches it), connects lazily, migrates the schema on the
/// first connect, and drops a connection that broke so the next call reconnects.
actor PostgresClient {
  nonisolated let address: PostgresAddress
  private let applicationName: String
  private let executor: DispatchQueueExecutor
  private var connection: PostgresConnection?
  private var migrated = false

  nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

  init(_ address: PostgresAddress, applicationName: String = "haul") {
    self.address = address
    self.applicationName = applicationName
    self.executor = DispatchQueueExecutor(label: "haul.postgres")
  }

  /// Runs `body` on a live, migrated connection. A statement that failed on a deadlock or a
  /// serialization conflict was rolled back whole, so it is run again (a few times).
  @discardableResult
  func run<T: Sendable>(_ body: @Sendable (PostgresConnection) throws(PostgresError) -> T) throws(HaulError)
    -> T
  {
    var attempt = 0
    while true {
      attempt += 1
      let live = try connected()
      do throws(PostgresError) {
        return try body(live)
      } catch {
        if !live.isUsable { connection = nil }
        if attempt < 5, ["40001", "40P01"].contains(error.sqlState ?? "") { continue }
        throw error.haulError(address)
      }
    }
  }

  /// Closes the connection (the next `run` opens a new one).
  func close() { connection = nil }

  private func connected() throws(HaulError) -> PostgresConnection {
    if let connection, connection.isUsable { return connection }
    connection = nil
    let fresh = try PostgresConnection(address, applicationName: applicationName)
    if !migrated {
      try FleetSchema.migrate(fresh)
      migrated = true
    }
    connection = fresh
    return fresh
  }
}

/// Runs an actor's jobs on one serial dispatch queue (Linux has no DispatchSerialQueue executor).
final class DispatchQueueExecutor: SerialExecutor {
  private let queue: DispatchQueue

  init(label: String) { queue = DispatchQueue(label: label) }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
  }

  func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}
