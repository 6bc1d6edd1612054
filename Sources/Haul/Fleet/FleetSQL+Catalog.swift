/// The statements behind `PostgresCatalog`, the manager's catalog on the fleet queue. Like the
/// others, each keeps the origins' counters exact in the same statement; none touches a job
/// another owner holds except to leave it a request (`control`).
extension FleetSQL {
  /// Downloads a manager adds: $1 ids, $2 urls, $3 origins, $4 directories, $5 file names,
  /// $6 options, $7 connections, $8 positions, $9 states, $10 added at (epoch seconds).
  static let insertRecords = """
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[],
                           $7::int[], $8::bigint[], $9::text[], $10::float8[])
        AS t(gid, url, origin, directory, file_name, options, connections, position, state, added)
    ), origins_counted AS (
      INSERT INTO haul.origins AS o (origin, max_connections, queued, top_priority)
      SELECT origin, (SELECT value::int FROM haul.meta WHERE key = 'default_origin_connections'),
             count(*) FILTER (WHERE state = 'queued'), 0
      FROM input GROUP BY origin ORDER BY origin
      ON CONFLICT (origin) DO UPDATE
        SET queued = o.queued + EXCLUDED.queued, top_priority = greatest(o.top_priority, 0)
    )
    INSERT INTO haul.jobs (gid, url, origin, directory, file_name, options, connections, position, state,
                           created_at)
    SELECT gid, url, origin, directory, file_name, options, connections, position, state, to_timestamp(added)
    FROM input
    """

  /// A new state for a job nobody holds, or a request for its holder: $1 id, $2 state,
  /// $3 category, $4 message, $5 hint. A held job is never queued again from here (its holder,
  /// or the lease's expiry, ends the claim).
  static let setState = """
    WITH target AS (
      SELECT id, state FROM haul.jobs WHERE gid = $1::text FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN t.state = 'active' THEN 'active' ELSE $2::text END,
          control = CASE WHEN t.state <> 'active' THEN NULL
                         WHEN $2::text = 'paused' THEN coalesce(j.control, 'pause')
                         WHEN $2::text = 'removed' THEN 'remove' ELSE j.control END,
          error_category = CASE WHEN t.state = 'active' THEN j.error_category ELSE $3::int END,
          error_message = CASE WHEN t.state = 'active' THEN j.error_message ELSE $4::text END,
          error_hint = CASE WHEN t.state = 'active' THEN j.error_hint ELSE $5::text END,
          run_after = CASE WHEN t.state = 'active' THEN j.run_after END
      FROM target t
      WHERE j.id = t.id AND NOT (t.state = 'active' AND $2::text NOT IN ('paused', 'removed'))
      RETURNING j.origin, j.priority, t.state AS previous, j.state
    ), counted AS (
      UPDATE haul.origins o
      SET queued = o.queued + (c.state = 'queued')::int - (c.previous = 'queued')::int,
          top_priority = CASE WHEN c.state = 'queued' THEN greatest(o.top_priority, c.priority)
                              ELSE o.top_priority END
      FROM changed c WHERE o.origin = c.origin
    )
    SELECT count(*) FROM changed
    """

  /// $1 id, $2 position.
  static let setPosition = "UPDATE haul.jobs SET position = $2::bigint WHERE gid = $1::text"

  /// $1 id, $2 options, $3 connections.
  static let setOptions = """
    UPDATE haul.jobs SET options = $2::jsonb, connections = $3::int WHERE gid = $1::text
    """

  /// A new URL, perhaps on another origin: $1 id, $2 url, $3 origin. A waiting job moves its
  /// count from the old origin to the new one.
  static let setURL = """
    WITH target AS (
      SELECT id, origin AS old, state FROM haul.jobs WHERE gid = $1::text FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j SET url = $2::text, origin = $3::text FROM target t WHERE j.id = t.id
      RETURNING t.old, t.state
    ), left_behind AS (
      UPDATE haul.origins o SET queued = o.queued - 1
      FROM changed c WHERE o.origin = c.old AND c.state = 'queued' AND c.old <> $3::text
    ), arrived AS (
      INSERT INTO haul.origins AS o (origin, max_connections, queued, top_priority)
      SELECT $3::text, (SELECT value::int FROM haul.meta WHERE key = 'default_origin_connections'), 1, 0
      FROM changed c WHERE c.state = 'queued' AND c.old <> $3::text
      ON CONFLICT (origin) DO UPDATE SET queued = o.queued + 1, top_priority = greatest(o.top_priority, 0)
    )
    SELECT count(*) FROM changed
    """

  /// Ends this owner's claim with the run's outcome: $1 row id, $2 token, $3 state, $4 bytes,
  /// $5 total, $6 file, $7 category, $8 message, $9 hint, $10 sha256, $11 final URL.
  /// No row: the lease was lost, and nothing is recorded.
  static let finishClaim = """
    WITH held AS (
      SELECT id, origin, granted FROM haul.jobs
      WHERE id = $1::bigint AND lease_token = $2::bigint AND state = 'active'
      FOR UPDATE
    ), finished AS (
      UPDATE haul.jobs j
      SET state = CASE WHEN j.control = 'remove' THEN 'removed' ELSE $3::text END, control = NULL,
          granted = 0, lease_expires_at = NULL, speed = NULL, bytes = $4::bigint, total = $5::bigint,
          file = coalesce($6::text, j.file), error_category = $7::int, error_message = $8::text,
          error_hint = $9::text, sha256 = $10::text, final_url = coalesce($11::text, j.final_url),
          finished_at = CASE WHEN $3::text IN ('complete', 'failed') THEN now() END, progress_at = now()
      FROM held WHERE j.id = held.id
      RETURNING j.state, j.priority
    ), freed AS (
      UPDATE haul.origins o
      SET active = o.active - held.granted,
          queued = o.queued + (SELECT count(*) FROM finished WHERE state = 'queued'),
          top_priority = greatest(o.top_priority, (SELECT priority FROM finished WHERE state = 'queued'))
      FROM held WHERE o.origin = held.origin
    )
    SELECT state FROM finished
    """

  /// The same outcome for a job nobody holds (a complete download queued again because its
  /// file is gone): $1 id, then as `finishClaim` from $3.
  static let setResult = """
    WITH target AS (
      SELECT id, state FROM haul.jobs WHERE gid = $1::text AND state <> 'active' FOR UPDATE
    ), changed AS (
      UPDATE haul.jobs j
      SET state = $3::text, bytes = $4::bigint, total = $5::bigint, file = coalesce($6::text, j.file),
          error_category = $7::int, error_message = $8::text, error_hint = $9::text, sha256 = $10::text,
          final_url = coalesce($11::text, j.final_url), control = NULL, run_after = NULL,
          finished_at = CASE WHEN $3::text IN ('complete', 'failed') THEN coalesce(j.finished_at, now()) END
      FROM target t WHERE j.id = t.id
      RETURNING j.origin, j.priority, t.state AS previous, j.state
    ), counted AS (
      UPDATE haul.origins o
      SET queued = o.queued + (c.state = 'queued')::int - (c.previous = 'queued')::int,
          top_priority = CASE WHEN c.state = 'queued' THEN greatest(o.top_priority, c.priority)
                              ELSE o.top_priority END
      FROM changed c WHERE o.origin = c.origin
    )
    SELECT count(*) FROM changed
    """

  /// Forgets a job nobody holds ($1 id); a held one gets a remove request instead.
  static let deleteRecord = """
    WITH target AS (
      SELECT id, state, origin FROM haul.jobs WHERE gid = $1::text FOR UPDATE
    ), gone AS (
      DELETE FROM haul.jobs j USING target t WHERE j.id = t.id AND t.state <> 'active'
      RETURNING t.origin, t.state
    ), requested AS (
      UPDATE haul.jobs j SET control = 'remove' FROM target t WHERE j.id = t.id AND t.state = 'active'
    ), counted AS (
      UPDATE haul.origins o SET queued = o.queued - 1 FROM gone g WHERE o.origin = g.origin AND g.state = 'queued'
    )
    SELECT count(*) FROM gone
    """

  /// Forgets a job this owner holds: $1 row id, $2 token; its connections are freed. No row:
  /// the lease was lost, and the job is left to its new holder.
  static let deleteHeld = """
    WITH held AS (
      SELECT id, origin, granted FROM haul.jobs
      WHERE id = $1::bigint AND lease_token = $2::bigint AND state = 'active'
      FOR UPDATE
    ), gone AS (
      DELETE FROM haul.jobs j USING held WHERE j.id = held.id RETURNING held.origin, held.granted
    ), freed AS (
      UPDATE haul.origins o SET active = o.active - g.granted FROM gone g WHERE o.origin = g.origin
    )
    SELECT count(*) FROM gone
    """

  /// Every job in the manager's order: the columns `PostgresCatalog.record` reads.
  static let records = """
    SELECT gid, url, directory, file_name, options, connections, state, position, bytes, total, file,
           error_category, error_message, error_hint, sha256, final_url,
           extract(epoch FROM created_at), extract(epoch FROM finished_at), id, lease_token, granted
    FROM haul.jobs
    """

  /// Renews many leases at once: $1 row ids, $2 tokens, $3 seconds. Returns those still held,
  /// with any pending request.
  static let renewMany = """
    UPDATE haul.jobs j SET lease_expires_at = now() + make_interval(secs => $3::float8)
    FROM unnest($1::bigint[], $2::bigint[]) AS h(id, token)
    WHERE j.id = h.id AND j.lease_token = h.token AND j.state = 'active'
    RETURNING j.id, coalesce(j.control, '')
    """
}
