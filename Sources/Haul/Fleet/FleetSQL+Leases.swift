/// The statements a worker runs: claim, renew (with progress), complete, fail, release, and the
/// maintenance that takes expired leases back and queues delayed jobs when they are due.
///
/// A lease is the pair (job id, lease token): every claim draws a new token from a sequence,
/// and every later statement of the holder matches on both, so a worker whose lease expired and
/// was taken over can no longer change the job in any way, however late its statements arrive.
extension FleetSQL {
  /// Claims one job: $1 worker name, $2 lease seconds. One row: the job's columns (all NULL when
  /// nothing was claimed) and `more`.
  ///
  /// One statement (in `haul.claim`, FleetSchema+Functions, whose plan the server keeps), two
  /// index probes whatever the queue's length: the best origin that has a job waiting and a
  /// free connection (priority of its best job, then the origin served longest ago, so origins
  /// take turns), then that origin's best job (priority, then position, then the order added).
  /// Both are locked with SKIP LOCKED, so concurrent claimers never wait for each other: they
  /// take other origins. `more` tells a claimer that found nothing whether other origins were
  /// claimable (then it tries again at once) or the queue is idle.
  package static let claim = "SELECT * FROM haul.claim($1::text, $2::float8)"

  /// Renews the lease and records progress: $1 id, $2 token, $3 bytes, $4 total, $5 speed, $6 file,
  /// $7 final URL, $8 lease seconds. No row: the lease is lost. Else the pending request, if any
  /// (`haul.renew`: one UPDATE of the holder's row, matched on id, token and state).
  package static let renew = """
    SELECT * FROM haul.renew($1::bigint, $2::bigint, $3::bigint, $4::bigint, $5::float8, $6::text, $7::text,
                             $8::float8)
    """

  /// The holder's row, locked, with the connections it holds (for the origin's count).
  private static let held = """
    held AS (
      SELECT id, origin, granted FROM haul.jobs
      WHERE id = $1::bigint AND lease_token = $2::bigint AND state = 'active'
      FOR UPDATE
    )
    """

  /// Frees the holder's connections on its origin; `requeued` says how many jobs went back to waiting.
  private static func freed(requeued: String) -> String {
    """
    freed AS (
      UPDATE haul.origins o
      SET active = o.active - held.granted, queued = o.queued + (\(requeued)),
          top_priority = CASE WHEN (\(requeued)) > 0
            THEN greatest(o.top_priority, (SELECT priority FROM finished)) ELSE o.top_priority END
      FROM held
      WHERE o.origin = held.origin
    )
    """
  }

  /// Marks the job complete with its result: $1 id, $2 token, $3 size, $4 SHA-256, $5 final URL, $6 file.
  /// No row: the lease was lost (another worker owns the job now). `haul.complete` marks the job
  /// and frees its connections on the origin in one statement, as `fail` and `release` do.
  package static let complete = """
    SELECT * FROM haul.complete($1::bigint, $2::bigint, $3::bigint, $4::text, $5::text, $6::text)
    """

  /// Marks the job failed: $1 id, $2 token, $3 category, $4 message, $5 hint, $6 bytes held.
  static let fail = """
    WITH \(held), finished AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN j.control = 'remove' THEN 'removed' ELSE 'failed' END, control = NULL,
          granted = 0, lease_expires_at = NULL, speed = NULL, bytes = coalesce($6::bigint, j.bytes),
          error_category = $3::int, error_message = $4::text, error_hint = $5::text, finished_at = now()
      FROM held WHERE j.id = held.id
      RETURNING j.state, j.priority
    ), \(freed(requeued: "0"))
    SELECT state FROM finished
    """

  /// Gives the job back: $1 id, $2 token, $3 delay seconds (0: queued at once), $4 1 when this
  /// claim should not count as an attempt, $5 category, $6 message, $7 hint (why, for `ls`),
  /// $8 bytes held. A pending pause or remove is carried out instead.
  static let release = """
    WITH \(held), finished AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN j.control = 'pause' THEN 'paused' WHEN j.control = 'remove' THEN 'removed'
                       WHEN $3::float8 > 0 THEN 'delayed' ELSE 'queued' END,
          run_after = CASE WHEN j.control IS NULL AND $3::float8 > 0
                           THEN now() + make_interval(secs => $3::float8) END,
          control = NULL, granted = 0, lease_expires_at = NULL, speed = NULL,
          attempts = j.attempts - $4::int, bytes = coalesce($8::bigint, j.bytes),
          error_category = $5::int, error_message = $6::text, error_hint = $7::text
      FROM held WHERE j.id = held.id
      RETURNING j.state, j.priority
    ), \(freed(requeued: "SELECT count(*) FROM finished WHERE state = 'queued'"))
    SELECT state FROM finished
    """

  /// Takes back jobs whose lease expired (their worker died, hung or lost the database): queued
  /// again, or paused/removed when that was asked meanwhile, or failed after $1 lost leases
  /// (a job that kills every worker that touches it must not go round forever).
  static let rescue = """
    WITH expired AS (
      SELECT id, granted FROM haul.jobs
      WHERE state = 'active' AND lease_expires_at < now()
      ORDER BY lease_expires_at
      LIMIT 500
      FOR UPDATE SKIP LOCKED
    ), rescued AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN j.control = 'pause' THEN 'paused' WHEN j.control = 'remove' THEN 'removed'
                       WHEN j.lost_leases + 1 >= $1::int THEN 'failed' ELSE 'queued' END,
          error_category = CASE WHEN j.control IS NULL AND j.lost_leases + 1 >= $1::int THEN 1
                                ELSE j.error_category END,
          error_message = CASE WHEN j.control IS NULL AND j.lost_leases + 1 >= $1::int
                               THEN 'abandoned: ' || (j.lost_leases + 1)
                                    || ' workers lost their lease on it (they died, hung or lost the database)'
                               ELSE j.error_message END,
          finished_at = CASE WHEN j.control IS NULL AND j.lost_leases + 1 >= $1::int THEN now() END,
          -- A job given up on was finished by no worker (the last one lost it).
          worker = CASE WHEN j.control IS NULL AND j.lost_leases + 1 >= $1::int THEN NULL ELSE j.worker END,
          control = NULL, granted = 0, lease_expires_at = NULL, speed = NULL, lost_leases = j.lost_leases + 1
      FROM expired e
      WHERE j.id = e.id
      RETURNING j.gid, j.origin, j.state, j.priority, e.granted
    ), counted AS (
      UPDATE haul.origins o
      SET active = o.active - p.freed, queued = o.queued + p.requeued, top_priority = greatest(o.top_priority, p.top)
      FROM (SELECT origin, sum(granted) AS freed, count(*) FILTER (WHERE state = 'queued') AS requeued,
                   max(priority) FILTER (WHERE state = 'queued') AS top
            FROM rescued GROUP BY origin) p
      WHERE o.origin = p.origin
    )
    SELECT gid, state FROM rescued
    """

  /// Queues delayed jobs whose time has come.
  static let promote = """
    WITH due AS (
      SELECT id FROM haul.jobs WHERE state = 'delayed' AND run_after <= now()
      ORDER BY run_after LIMIT 1000 FOR UPDATE SKIP LOCKED
    ), promoted AS (
      UPDATE haul.jobs j SET state = 'queued', run_after = NULL FROM due WHERE j.id = due.id
      RETURNING j.origin, j.priority
    ), counted AS (
      UPDATE haul.origins o SET queued = o.queued + p.n, top_priority = greatest(o.top_priority, p.top)
      FROM (SELECT origin, count(*) AS n, max(priority) AS top FROM promoted GROUP BY origin) p
      WHERE o.origin = p.origin
    )
    SELECT count(*) FROM promoted
    """
}
