/// The fleet queue's statements for adding, listing and control. Each is one statement, so one
/// transaction; each keeps `haul.origins.queued` and `.active` exact in the same statement as the
/// jobs it changes (the claim trusts those counters). Rows of several jobs are locked in id order
/// so that two such statements never deadlock on each other. Parameters are always bound.
package enum FleetSQL {
  static func isJobID(_ text: String) -> Bool {
    text.utf8.count == 16 && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
  }

  /// $1 ids, $2 urls, $3 origins, $4 directories, $5 file names, $6 options, $7 connections, $8 priorities,
  /// $9 paused (added paused: not counted as waiting).
  static let add = """
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[],
                           $7::int[], $8::int[])
        AS t(gid, url, origin, directory, file_name, options, connections, priority)
    ), origins_counted AS (
      INSERT INTO haul.origins AS o (origin, max_connections, queued, top_priority)
      SELECT origin, (SELECT value::int FROM haul.meta WHERE key = 'default_origin_connections'),
             CASE WHEN $9::boolean THEN 0 ELSE count(*) END, max(priority)
      FROM input GROUP BY origin ORDER BY origin
      ON CONFLICT (origin) DO UPDATE
        SET queued = o.queued + EXCLUDED.queued, top_priority = greatest(o.top_priority, EXCLUDED.top_priority)
    )
    INSERT INTO haul.jobs (gid, url, origin, directory, file_name, options, connections, priority, state)
    SELECT gid, url, origin, directory, file_name, options, connections, priority,
           CASE WHEN $9::boolean THEN 'paused' ELSE 'queued' END
    FROM input
    """

  /// The columns `job(_:)` reads, in order. `worker` keeps the last holder's name; it is shown as
  /// the holder only while the job is active, and as who finished it once complete or failed. The
  /// speed only while the holder's reports are fresh (`FleetJob.speedLifetime`).
  static let jobColumns = """
    gid, url, directory, file_name, state, priority, control, CASE WHEN state = 'active' THEN worker END,
    extract(epoch FROM lease_expires_at - now()), granted, bytes, total,
    CASE WHEN progress_at > now() - make_interval(secs => \(FleetJob.speedLifetime)) THEN speed END,
    file, final_url, sha256,
    error_category, error_message, error_hint, attempts, lost_leases, extract(epoch FROM run_after - now()),
    CASE WHEN state IN ('complete', 'failed') THEN worker END
    """

  /// $1 ids or NULL for all, $2 include removed, $3 after this id or NULL, $4 limit.
  static let list = """
    SELECT \(jobColumns) FROM haul.jobs
    WHERE ($1::text[] IS NULL OR gid = ANY($1::text[])) AND ($2::boolean OR state <> 'removed')
      AND id > coalesce((SELECT id FROM haul.jobs WHERE gid = $3::text), 0)
    ORDER BY id LIMIT $4::int
    """

  static func job(_ row: PostgresRow) -> FleetJob {
    let error = row.text(17).map { message in
      HaulError(HaulError.Category(exitCode: Int32(row.int(16) ?? 1)), message, hint: row.text(18))
    }
    return FleetJob(
      id: row.text(0) ?? "", url: RequestURL.withoutPassword(row.text(1) ?? ""), directory: row.text(2) ?? "",
      fileName: row.text(3), state: row.text(4).flatMap(FleetJob.State.init(rawValue:)) ?? .failed,
      priority: Int(row.int(5) ?? 0), pendingRequest: row.text(6), worker: row.text(7),
      leaseRemaining: row.double(8), connections: Int(row.int(9) ?? 0), bytes: row.int(10) ?? 0,
      totalBytes: row.int(11), bytesPerSecond: row.double(12), file: row.text(13), finalURL: row.text(14),
      sha256: row.text(15), error: error, attempts: Int(row.int(19) ?? 0), lostLeases: Int(row.int(20) ?? 0),
      retryIn: row.double(21), finishedBy: row.text(22))
  }

  /// Waiting jobs are paused at once; a held one gets a request its worker acts on. $1 ids or NULL.
  static let pause = """
    WITH target AS (
      SELECT id, state FROM haul.jobs
      WHERE ($1::text[] IS NULL OR gid = ANY($1::text[])) AND state IN ('queued', 'delayed', 'active')
      ORDER BY id FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN t.state = 'active' THEN 'active' ELSE 'paused' END,
          control = CASE WHEN t.state = 'active' THEN coalesce(j.control, 'pause') END,
          run_after = NULL
      FROM target t WHERE j.id = t.id
      RETURNING j.gid, j.origin, t.state AS previous
    ), counted AS (
      UPDATE haul.origins o SET queued = o.queued - c.n
      FROM (SELECT origin, count(*) AS n FROM changed WHERE previous = 'queued' GROUP BY origin) c
      WHERE o.origin = c.origin
    )
    SELECT gid FROM changed
    """

  /// Paused jobs go back in the queue; a pause not yet acted on is withdrawn. $1 ids or NULL.
  static let resume = """
    WITH target AS (
      SELECT id, state FROM haul.jobs
      WHERE ($1::text[] IS NULL OR gid = ANY($1::text[]))
        AND (state = 'paused' OR (state = 'active' AND control = 'pause'))
      ORDER BY id FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN t.state = 'active' THEN 'active' ELSE 'queued' END, control = NULL
      FROM target t WHERE j.id = t.id
      RETURNING j.gid, j.origin, j.priority, t.state AS previous
    ), counted AS (
      UPDATE haul.origins o SET queued = o.queued + c.n, top_priority = greatest(o.top_priority, c.top)
      FROM (SELECT origin, count(*) AS n, max(priority) AS top FROM changed WHERE previous = 'paused'
            GROUP BY origin) c
      WHERE o.origin = c.origin
    )
    SELECT gid FROM changed
    """

  /// Failed jobs are queued again, their history cleared. $1 ids or NULL.
  static let retry = """
    WITH target AS (
      SELECT id FROM haul.jobs WHERE ($1::text[] IS NULL OR gid = ANY($1::text[])) AND state = 'failed'
      ORDER BY id FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j
      SET state = 'queued', attempts = 0, lost_leases = 0, error_category = NULL, error_message = NULL,
          error_hint = NULL, finished_at = NULL
      FROM target t WHERE j.id = t.id
      RETURNING j.gid, j.origin, j.priority
    ), counted AS (
      UPDATE haul.origins o SET queued = o.queued + c.n, top_priority = greatest(o.top_priority, c.top)
      FROM (SELECT origin, count(*) AS n, max(priority) AS top FROM changed GROUP BY origin) c
      WHERE o.origin = c.origin
    )
    SELECT gid FROM changed
    """

  /// Jobs not held are removed at once; a held one gets a request its worker acts on. $1 ids.
  static let remove = """
    WITH target AS (
      SELECT id, state FROM haul.jobs WHERE gid = ANY($1::text[]) AND state <> 'removed'
      ORDER BY id FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN t.state = 'active' THEN 'active' ELSE 'removed' END,
          control = CASE WHEN t.state = 'active' THEN 'remove' END, run_after = NULL
      FROM target t WHERE j.id = t.id
      RETURNING j.gid, j.origin, t.state AS previous
    ), counted AS (
      UPDATE haul.origins o SET queued = o.queued - c.n
      FROM (SELECT origin, count(*) AS n FROM changed WHERE previous = 'queued' GROUP BY origin) c
      WHERE o.origin = c.origin
    )
    SELECT gid FROM changed
    """

  /// $1 ids, $2 the new priority. A waiting job's origin may move up in the claim order at once.
  static let reprioritise = """
    WITH target AS (
      SELECT id FROM haul.jobs WHERE gid = ANY($1::text[]) AND state <> 'removed' ORDER BY id FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j SET priority = $2::int FROM target t WHERE j.id = t.id
      RETURNING j.gid, j.origin, j.state
    ), raised AS (
      UPDATE haul.origins o SET top_priority = greatest(o.top_priority, $2::int)
      FROM (SELECT DISTINCT origin FROM changed WHERE state = 'queued') c
      WHERE o.origin = c.origin
    )
    SELECT gid FROM changed
    """

  /// $1 origin, $2 limit.
  static let setOriginLimit = """
    INSERT INTO haul.origins AS o (origin, max_connections, limit_is_default) VALUES ($1, $2::int, false)
    ON CONFLICT (origin) DO UPDATE SET max_connections = EXCLUDED.max_connections, limit_is_default = false
    """

  /// $1 limit: the default, and every origin that follows it.
  static let setDefaultLimit = """
    WITH setting AS (
      UPDATE haul.meta SET value = $1::text WHERE key = 'default_origin_connections'
    )
    UPDATE haul.origins SET max_connections = $1::int WHERE limit_is_default
    """
}
