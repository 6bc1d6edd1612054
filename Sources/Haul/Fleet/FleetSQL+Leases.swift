/// The statements a worker runs: claim, renew (with progress), complete, fail, release, and the
/// maintenance that takes expired leases back and queues delayed jobs when they are due.
///
/// A lease is the pair (job id, lease token): every claim draws a new token from a sequence,
/// and every later statement of the holder matches on both, so a worker whose lease expired and
/// was taken over can no longer change the job in any way, however late its statements arrive.
extension FleetSQL {
  /// Claims one job: $1 worker name, $2 lease seconds.
  ///
  /// Two index probes, whatever the queue's length: the best origin that has a job waiting and a
  /// free connection (priority of its best job, then the origin served longest ago, so origins
  /// take turns), then that origin's best job (priority, then position, then the order added). Both are locked with SKIP LOCKED, so concurrent
  /// claimers never wait for each other: they take other origins. `more` tells a claimer that
  /// found nothing whether other origins were claimable (then it tries again at once) or the
  /// queue is idle.
  package static let claim = """
    WITH origin AS (
      SELECT o.origin, o.max_connections - o.active AS free
      FROM haul.origins o
      WHERE o.queued > 0 AND o.active < o.max_connections
      ORDER BY o.top_priority DESC NULLS LAST, o.last_claim_at, o.origin
      LIMIT 1
      FOR UPDATE SKIP LOCKED
    ), job AS (
      SELECT j.id, j.connections FROM origin, haul.jobs j
      WHERE j.id = (
        SELECT q.id FROM haul.jobs q
        WHERE q.origin = origin.origin AND q.state = 'queued'
        ORDER BY q.priority DESC, q.position, q.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED)
    ), claimed AS (
      UPDATE haul.jobs j
      SET state = 'active', worker = $1::text, lease_token = nextval('haul.lease_tokens'),
          lease_expires_at = now() + make_interval(secs => $2::float8),
          granted = least(job.connections, origin.free), attempts = j.attempts + 1,
          started_at = coalesce(j.started_at, now()), progress_at = now(), speed = NULL
      FROM job, origin
      WHERE j.id = job.id
      RETURNING j.id, j.gid, j.url, j.directory, j.file_name, j.options, j.granted, j.lease_token,
                j.bytes, j.total, j.file, j.origin, j.attempts
    ), counted AS (
      UPDATE haul.origins o
      SET active = o.active + coalesce((SELECT granted FROM claimed), 0),
          queued = o.queued - (SELECT count(*) FROM claimed),
          last_claim_at = now(),
          top_priority = (
            SELECT n.priority FROM haul.jobs n
            WHERE n.origin = o.origin AND n.state = 'queued' AND n.id <> coalesce((SELECT id FROM claimed), 0)
            ORDER BY n.priority DESC, n.position, n.id
            LIMIT 1)
      FROM origin
      WHERE o.origin = origin.origin
    )
    SELECT c.id, c.gid, c.url, c.directory, c.file_name, c.options, c.granted, c.lease_token, c.bytes, c.total,
           c.file, c.origin, c.attempts,
           EXISTS (SELECT 1 FROM haul.origins r WHERE r.queued > 0 AND r.active < r.max_connections) AS more
    FROM (SELECT 1) AS one LEFT JOIN claimed c ON true
    """

  /// Renews the lease and records progress: $1 id, $2 token, $3 bytes, $4 total, $5 speed, $6 file,
  /// $7 final URL, $8 lease seconds. No row: the lease is lost. Else the pending request, if any.
  package static let renew = """
    UPDATE haul.jobs
    SET bytes = coalesce($3::bigint, bytes), total = coalesce($4::bigint, total), speed = $5::float8,
        file = coalesce($6::text, file), final_url = coalesce($7::text, final_url), progress_at = now(),
        lease_expires_at = now() + make_interval(secs => $8::float8)
    WHERE id = $1::bigint AND lease_token = $2::bigint AND state = 'active'
    RETURNING coalesce(control, '')
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
  /// No row: the lease was lost (another worker owns the job now).
  package static let complete = """
    WITH \(held), finished AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN j.control = 'remove' THEN 'removed' ELSE 'complete' END, control = NULL,
          granted = 0, lease_expires_at = NULL, bytes = $3::bigint, total = $3::bigint, speed = NULL,
          sha256 = $4::text, final_url = $5::text, file = $6::text, finished_at = now(), progress_at = now(),
          error_category = NULL, error_message = NULL, error_hint = NULL
      FROM held WHERE j.id = held.id
      RETURNING j.state, j.priority
    ), \(freed(requeued: "0"))
    SELECT state FROM finished
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
