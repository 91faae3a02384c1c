-- A third token scope: 'metrics' may read GET /metrics and nothing else (for a Prometheus scraper).
CREATE TABLE tokens_new (
  hash       TEXT PRIMARY KEY,
  scope      TEXT NOT NULL CHECK (scope IN ('admin', 'run', 'metrics')),
  run_id     INTEGER REFERENCES runs(id),
  created_at REAL NOT NULL,
  revoked_at REAL,
  CHECK ((scope = 'run') = (run_id IS NOT NULL))
) WITHOUT ROWID;
INSERT INTO tokens_new SELECT hash, scope, run_id, created_at, revoked_at FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_new RENAME TO tokens;
