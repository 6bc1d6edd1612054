/// The fleet queue's tables, created and migrated by Haul in a PostgreSQL schema named `haul`
/// (nothing outside it is touched). `haul.meta` holds `schema_version`; each migration runs
/// once, in order, inside one transaction under an advisory lock, so workers starting together
/// never race, and a queue made by a newer Haul is refused instead of being damaged.
package enum FleetSchema {
  /// The version this build creates and understands.
  static let version = 3

  /// Key of the advisory lock that serialises migrations (any constant unique to Haul).
  private static let migrationLock: Int64 = 0x6861_756C_7131  // "haulq1"

  /// Brings the schema to `version`; a no-op (one query) when it is already there.
  package static func migrate(_ connection: PostgresConnection) throws(HaulError) {
    let found: Int
    do throws(PostgresError) {
      found = try migrateIfOlder(connection)
    } catch {
      throw error.haulError(connection.address)
    }
    guard found <= version else {
      throw HaulError(
        .generic,
        "the queue at \(connection.address) has schema version \(found); this haul knows up to \(version)",
        hint: "upgrade haul on this host (every worker of a fleet should run the same version)")
    }
  }

  /// Runs the migrations the database lacks; returns the version it had (0 for none).
  private static func migrateIfOlder(_ connection: PostgresConnection) throws(PostgresError) -> Int {
    if let found = try currentVersion(connection), found >= version { return found }
    return try connection.transaction { () throws(PostgresError) -> Int in
      try connection.query("SELECT pg_advisory_xact_lock($1)", [migrationLock])
      try connection.query("CREATE SCHEMA IF NOT EXISTS haul")
      try connection.query("CREATE TABLE IF NOT EXISTS haul.meta (key text PRIMARY KEY, value text NOT NULL)")
      // Read again under the lock: another host may have migrated meanwhile.
      let found = try currentVersion(connection) ?? 0
      guard found < version else { return found }
      for (index, statements) in migrations.enumerated() where index + 1 > found {
        for statement in statements { try connection.query(statement) }
      }
      try connection.query(
        """
        INSERT INTO haul.meta (key, value) VALUES ('schema_version', $1)
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
        """, [version])
      return found
    }
  }

  private static func currentVersion(_ connection: PostgresConnection) throws(PostgresError) -> Int? {
    // Two statements: one naming haul.meta would fail to parse where it does not exist yet.
    guard try connection.query("SELECT to_regclass('haul.meta') IS NOT NULL").row(0).bool(0) == true else {
      return nil
    }
    let rows = try connection.query("SELECT value FROM haul.meta WHERE key = 'schema_version'")
    return rows.count == 1 ? rows[0, 0].flatMap { Int($0) } : nil
  }

  /// Migration N (1-based) brings the schema from version N-1 to N. Never edit a released one:
  /// append a new one.
  static let migrations: [[String]] = [
    [
      // Settings shared by the fleet.
      "INSERT INTO haul.meta (key, value) VALUES ('default_origin_connections', '4') ON CONFLICT DO NOTHING",
      // Fencing tokens: every claim takes a new one, so a stale holder can never pass for the current one.
      "CREATE SEQUENCE haul.lease_tokens",
      // One row per origin (scheme://host:port): the politeness limit and the claim order.
      // `active` counts connections held by active jobs and `queued` the jobs waiting, both kept
      // exact by the same statements that change the jobs.
      """
      CREATE TABLE haul.origins (
        origin text PRIMARY KEY,
        max_connections integer NOT NULL CHECK (max_connections > 0),
        limit_is_default boolean NOT NULL DEFAULT true,
        active integer NOT NULL DEFAULT 0 CHECK (active >= 0),
        queued integer NOT NULL DEFAULT 0 CHECK (queued >= 0),
        top_priority integer,
        last_claim_at timestamptz NOT NULL DEFAULT '-infinity'
      )
      """,
      // The first step of a claim: the best origin with a free connection and a job waiting.
      """
      CREATE INDEX origins_claim ON haul.origins (top_priority DESC NULLS LAST, last_claim_at, origin)
        WHERE queued > 0 AND active < max_connections
      """,
      """
      CREATE TABLE haul.jobs (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        gid text NOT NULL UNIQUE CHECK (gid ~ '^[0-9a-f]{16}$'),
        url text NOT NULL,
        origin text NOT NULL,
        directory text NOT NULL DEFAULT '',
        file_name text,
        options jsonb NOT NULL DEFAULT '{}',
        connections integer NOT NULL DEFAULT 1 CHECK (connections BETWEEN 1 AND 64),
        priority integer NOT NULL DEFAULT 0,
        state text NOT NULL DEFAULT 'queued'
          CHECK (state IN ('queued', 'delayed', 'active', 'paused', 'complete', 'failed', 'removed')),
        control text CHECK (control IN ('pause', 'remove')),
        run_after timestamptz,
        attempts integer NOT NULL DEFAULT 0,
        lost_leases integer NOT NULL DEFAULT 0,
        worker text,
        lease_token bigint,
        lease_expires_at timestamptz,
        granted integer NOT NULL DEFAULT 0,
        bytes bigint NOT NULL DEFAULT 0,
        total bigint,
        speed double precision,
        file text,
        final_url text,
        sha256 text,
        error_category integer,
        error_message text,
        error_hint text,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        progress_at timestamptz,
        finished_at timestamptz
      )
      """,
      // The second step of a claim: the origin's best waiting job (priority, then first added).
      "CREATE INDEX jobs_claim ON haul.jobs (origin, priority DESC, id) WHERE state = 'queued'",
      // Finding expired leases and due retries without scanning the table.
      "CREATE INDEX jobs_lease ON haul.jobs (lease_expires_at) WHERE state = 'active'",
      "CREATE INDEX jobs_delayed ON haul.jobs (run_after) WHERE state = 'delayed'",
    ],
    [
      // The download manager's queue order (sparse positions, lower first) within a priority.
      "ALTER TABLE haul.jobs ADD COLUMN position bigint NOT NULL DEFAULT 0",
      "DROP INDEX haul.jobs_claim",
      "CREATE INDEX jobs_claim ON haul.jobs (origin, priority DESC, position, id) WHERE state = 'queued'",
      "CREATE INDEX jobs_order ON haul.jobs (position, id)",
    ],
    // The claim, renewal and completion as functions whose plans the server keeps (FleetSchema+Functions).
    functions,
  ]
}
