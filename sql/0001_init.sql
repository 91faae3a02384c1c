-- tsum schema v1: experiments, runs, the run ledger (status transitions and write-once phase marks), tokens.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE experiments (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  spec       TEXT NOT NULL,            -- the validated request body, JSON
  created_at REAL NOT NULL
);

CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  config_index  INTEGER NOT NULL,
  repetition    INTEGER NOT NULL,
  provider      TEXT NOT NULL,
  instance_type TEXT NOT NULL,
  hourly_price  REAL NOT NULL,
  currency      TEXT NOT NULL,
  status        TEXT NOT NULL CHECK (status IN ('queued', 'provisioning', 'booting', 'installing', 'loading',
                  'starting', 'learning', 'verifying', 'saving', 'terminating', 'done', 'failed', 'cancelled')),
  reason        TEXT NOT NULL DEFAULT '',
  instance      TEXT,                  -- the provider's InstanceHandle, JSON, stored verbatim
  created_at    REAL NOT NULL,
  updated_at    REAL NOT NULL,
  UNIQUE (experiment_id, config_index, repetition)
);
CREATE INDEX runs_by_status ON runs(status);

-- Every status change, in order. Written only by the ledger's advance().
CREATE TABLE run_transitions (
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  seq         INTEGER NOT NULL,
  from_status TEXT NOT NULL,
  to_status   TEXT NOT NULL,
  reason      TEXT NOT NULL,
  at          REAL NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- Phase marks. The primary key makes each (run, phase, mark) writable once: inserts use
-- ON CONFLICT DO NOTHING, and the triggers refuse updates and deletes outright.
CREATE TABLE phase_marks (
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  phase       TEXT NOT NULL CHECK (phase IN ('startup', 'install', 'load_data', 'start', 'learn', 'verify',
                'save', 'poweroff')),
  mark        TEXT NOT NULL CHECK (mark IN ('begin', 'end')),
  t           REAL NOT NULL,           -- seconds on the clock named below
  clock       TEXT NOT NULL CHECK (clock IN ('daemon', 'agent')),
  received_at REAL NOT NULL,           -- daemon wall clock
  attrs       TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, phase, mark)
) WITHOUT ROWID;

CREATE TRIGGER phase_marks_write_once BEFORE UPDATE ON phase_marks
BEGIN
  SELECT RAISE(ABORT, 'phase marks are write-once');
END;

CREATE TRIGGER phase_marks_keep BEFORE DELETE ON phase_marks
BEGIN
  SELECT RAISE(ABORT, 'phase marks are write-once');
END;

-- The trainer's per-epoch progress, idempotent by (run, epoch).
CREATE TABLE run_epochs (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  epoch  INTEGER NOT NULL,
  attrs  TEXT NOT NULL,
  PRIMARY KEY (run_id, epoch)
) WITHOUT ROWID;

-- API tokens. Only the SHA-256 of a token is stored. A 'run' token may post only its own run's events.
CREATE TABLE tokens (
  hash       TEXT PRIMARY KEY,
  scope      TEXT NOT NULL CHECK (scope IN ('admin', 'run')),
  run_id     INTEGER REFERENCES runs(id),
  created_at REAL NOT NULL,
  revoked_at REAL,
  CHECK ((scope = 'run') = (run_id IS NOT NULL))
) WITHOUT ROWID;
