extension SQLiteCatalog {
  /// The schema, step by step. A new version appends a step; never edit a released one.
  static let migrations: [CatalogMigration] = [
    CatalogMigration(
      version: 1,
      statements: """
        CREATE TABLE downloads (
          id TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 16),
          url TEXT NOT NULL,
          destination_kind TEXT NOT NULL CHECK (destination_kind IN ('file', 'directory')),
          destination TEXT NOT NULL,
          file TEXT,
          options TEXT NOT NULL,
          secrets INTEGER NOT NULL DEFAULT 0,
          state TEXT NOT NULL
            CHECK (state IN ('queued', 'active', 'paused', 'complete', 'failed', 'removed')),
          position INTEGER NOT NULL,
          bytes INTEGER NOT NULL DEFAULT 0,
          total INTEGER,
          error_category INTEGER,
          error_message TEXT,
          error_hint TEXT,
          sha256 TEXT,
          final_url TEXT,
          added_at REAL NOT NULL,
          finished_at REAL,
          claimed_by TEXT
        ) STRICT;
        CREATE INDEX downloads_order ON downloads (position, id);
        CREATE INDEX downloads_runnable ON downloads (position, id)
          WHERE state = 'queued' AND claimed_by IS NULL;
        """,
      objects: ["downloads", "downloads_order", "downloads_runnable"])
  ]
}
