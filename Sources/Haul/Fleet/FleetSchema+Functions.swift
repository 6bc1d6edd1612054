/// Migration 3: the hot statements (claim, renew, complete) as PL/pgSQL functions.
///
/// Why: sent as plain statements, each was parsed and planned on every call, and planning the
/// claim cost more than running it (about 1 ms of the server's CPU, against 0.5 ms to execute).
/// PL/pgSQL keeps each statement's plan for the life of the server connection, with no session
/// state the client sees: no prepared statements, so PgBouncer in transaction mode still works.
/// Each function holds exactly the statement that ran before (`$1`… are its arguments), so one
/// call is still one statement, one transaction, with the same locks and SKIP LOCKED.
///
/// Frozen with the migration: a later change to one of them is a new migration that replaces it
/// (CREATE OR REPLACE FUNCTION).
extension FleetSchema {
  static let functions: [String] = [
    // Claims one job: $1 worker name, $2 lease seconds. See `FleetSQL.claim`.
    """
    CREATE OR REPLACE FUNCTION haul.claim(text, float8)
    RETURNS TABLE (id bigint, gid text, url text, directory text, file_name text, options jsonb,
                   granted integer, lease_token bigint, bytes bigint, total bigint, file text, origin text,
                   attempts integer, more boolean)
    LANGUAGE plpgsql VOLATILE AS $claim$
    #variable_conflict use_column
    BEGIN
      RETURN QUERY
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
      -- Whether other origins had work only matters when nothing was claimed.
      SELECT c.id, c.gid, c.url, c.directory, c.file_name, c.options, c.granted, c.lease_token, c.bytes,
             c.total, c.file, c.origin, c.attempts,
             c.id IS NOT NULL
               OR EXISTS (SELECT 1 FROM haul.origins r WHERE r.queued > 0 AND r.active < r.max_connections)
      FROM (SELECT 1) AS one LEFT JOIN claimed c ON true;
    END
    $claim$
    """,
    // Renews a lease with progress: $1 id, $2 token, $3 bytes, $4 total, $5 speed, $6 file,
    // $7 final URL, $8 lease seconds. See `FleetSQL.renew`.
    """
    CREATE OR REPLACE FUNCTION haul.renew(bigint, bigint, bigint, bigint, float8, text, text, float8)
    RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE AS $renew$
    BEGIN
      RETURN QUERY
      UPDATE haul.jobs
      SET bytes = coalesce($3::bigint, bytes), total = coalesce($4::bigint, total), speed = $5::float8,
          file = coalesce($6::text, file), final_url = coalesce($7::text, final_url), progress_at = now(),
          lease_expires_at = now() + make_interval(secs => $8::float8)
      WHERE id = $1::bigint AND lease_token = $2::bigint AND state = 'active'
      RETURNING coalesce(control, '');
    END
    $renew$
    """,
    // Completes a job: $1 id, $2 token, $3 size, $4 SHA-256, $5 final URL, $6 file. See `FleetSQL.complete`.
    """
    CREATE OR REPLACE FUNCTION haul.complete(bigint, bigint, bigint, text, text, text)
    RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE AS $complete$
    BEGIN
      RETURN QUERY
      WITH held AS (
        SELECT id, origin, granted FROM haul.jobs
        WHERE id = $1::bigint AND lease_token = $2::bigint AND state = 'active'
        FOR UPDATE
      ), finished AS (
        UPDATE haul.jobs j
        SET state = CASE WHEN j.control = 'remove' THEN 'removed' ELSE 'complete' END, control = NULL,
            granted = 0, lease_expires_at = NULL, bytes = $3::bigint, total = $3::bigint, speed = NULL,
            sha256 = $4::text, final_url = $5::text, file = $6::text, finished_at = now(),
            progress_at = now(), error_category = NULL, error_message = NULL, error_hint = NULL
        FROM held WHERE j.id = held.id
        RETURNING j.state
      ), freed AS (
        UPDATE haul.origins o
        SET active = o.active - held.granted
        FROM held
        WHERE o.origin = held.origin
      )
      SELECT state FROM finished;
    END
    $complete$
    """,
  ]
}
