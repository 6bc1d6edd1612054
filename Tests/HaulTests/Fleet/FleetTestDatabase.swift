import FleetTestSupport
import Foundation

@testable import Haul

/// A fresh database on the test process's own PostgreSQL, with a queue connected to it.
enum FleetTestDatabase {
  static func url() throws -> String { try TemporaryPostgres.shared().createDatabase() }

  static func queue() async throws -> FleetQueue {
    try await FleetQueue(PostgresAddress(url()))
  }

  /// Checks that the origins' counters equal what the jobs say (the claim trusts them).
  static func countersAgree(_ queue: FleetQueue) async throws -> Bool {
    let rows = try await queue.client.run { connection throws(PostgresError) in
      try connection.query(
        """
        SELECT count(*) FROM haul.origins o
        WHERE o.queued <> (SELECT count(*) FROM haul.jobs j WHERE j.origin = o.origin AND j.state = 'queued')
           OR o.active <> (SELECT coalesce(sum(granted), 0) FROM haul.jobs j
                           WHERE j.origin = o.origin AND j.state = 'active')
        """)
    }
    return rows[0, 0] == "0"
  }
}

extension FleetWorker {
  /// `run()`, drained after `seconds` if it has not returned by then (a bound against a hang,
  /// not a timing check: a drained worker's summary fails the test's expectations).
  func bounded(seconds: Double = 240) async throws(HaulError) -> FleetWorkerSummary {
    let watchdog = Task { [self] in
      try await Task.sleep(for: .seconds(seconds))
      drain()
    }
    defer { watchdog.cancel() }
    return try await run()
  }
}
