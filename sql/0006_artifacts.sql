-- Data sets (POST /v1/datasets): a tar of the files, stored as a blob by its sha256; machines download it by
-- that hash. Run artifacts: what a run's agent uploaded in save (checkpoint, events.jsonl, samples.csv).
CREATE TABLE datasets (
  name       TEXT PRIMARY KEY,
  format     TEXT NOT NULL CHECK (format IN ('idx', 'cifar10-bin', 'tokens', 'images', 'files')),
  sha256     TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  files      TEXT NOT NULL DEFAULT '[]',   -- [{"name", "bytes"}]
  created_at REAL NOT NULL
);
CREATE TABLE run_artifacts (
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  name       TEXT NOT NULL,
  sha256     TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  created_at REAL NOT NULL,
  PRIMARY KEY (run_id, name)
);
