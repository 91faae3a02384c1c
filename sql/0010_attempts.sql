-- Attempts (spot machines, issue 28): a run may need several machines in turn. Each attempt has its machine,
-- market, price, its own eight phases and how it ended; an interrupted attempt hands its last checkpoint to the
-- next. runs.attempt is the current one; runs.market its market (a recovery may fall back to on-demand), and
-- runs.provider, instance_type and hourly_price are the current attempt's too.
ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1);
ALTER TABLE runs ADD COLUMN market TEXT NOT NULL DEFAULT 'on-demand' CHECK (market IN ('on-demand', 'spot'));

CREATE TABLE run_attempts (
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  attempt       INTEGER NOT NULL CHECK (attempt >= 1),
  provider      TEXT NOT NULL,
  instance_type TEXT NOT NULL,
  market        TEXT NOT NULL CHECK (market IN ('on-demand', 'spot')),
  hourly_price  REAL NOT NULL,
  zone          TEXT NOT NULL DEFAULT '',  -- spot_recovery.zones' pick; '' the provider's own
  instance      TEXT,                 -- the provider's handle, once created
  started_at    REAL NOT NULL,        -- daemon clock: dispatched
  ended_at      REAL,                 -- daemon clock: the run moved on (a next attempt) or finished
  outcome       TEXT CHECK (outcome IN ('interrupted', 'abandoned', 'done', 'failed', 'cancelled')),
  reason        TEXT NOT NULL DEFAULT '',
  notice        TEXT,                 -- the interruption: {"source": "agent"|"cloud", "cloud", "text", "at"}
  PRIMARY KEY (run_id, attempt)
) WITHOUT ROWID;

-- Checkpoints the agents delivered (an artifact of the run), in order; the newest is what a next attempt resumes.
CREATE TABLE run_checkpoints (
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  attempt     INTEGER NOT NULL,
  artifact    TEXT NOT NULL,
  sha256      TEXT NOT NULL,
  bytes       INTEGER NOT NULL,
  attrs       TEXT NOT NULL,          -- the trainer's: epoch, examples, step, learn_seconds, reason
  received_at REAL NOT NULL,
  PRIMARY KEY (run_id, artifact)
) WITHOUT ROWID;

-- Phase marks and their statistics are per attempt now: the tables are made again with attempt in their keys
-- (DROP TABLE fires no trigger; the write-once triggers come back with the new tables).
CREATE TABLE phase_marks_v10 (
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  attempt     INTEGER NOT NULL DEFAULT 1,
  phase       TEXT NOT NULL CHECK (phase IN ('startup', 'install', 'load_data', 'start', 'learn', 'verify',
                'save', 'poweroff')),
  mark        TEXT NOT NULL CHECK (mark IN ('begin', 'end')),
  t           REAL NOT NULL,
  clock       TEXT NOT NULL CHECK (clock IN ('daemon', 'agent')),
  received_at REAL NOT NULL,
  attrs       TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, attempt, phase, mark)
) WITHOUT ROWID;
INSERT INTO phase_marks_v10 (run_id, attempt, phase, mark, t, clock, received_at, attrs)
  SELECT run_id, 1, phase, mark, t, clock, received_at, attrs FROM phase_marks;
DROP TABLE phase_marks;
ALTER TABLE phase_marks_v10 RENAME TO phase_marks;
CREATE TRIGGER phase_marks_write_once BEFORE UPDATE ON phase_marks
BEGIN
  SELECT RAISE(ABORT, 'phase marks are write-once');
END;
CREATE TRIGGER phase_marks_keep BEFORE DELETE ON phase_marks
BEGIN
  SELECT RAISE(ABORT, 'phase marks are write-once');
END;

CREATE TABLE phase_stats_v10 (
  run_id  INTEGER NOT NULL REFERENCES runs(id),
  attempt INTEGER NOT NULL DEFAULT 1,
  phase   TEXT NOT NULL,
  metric  TEXT NOT NULL,
  min     REAL NOT NULL,
  avg     REAL NOT NULL,
  max     REAL NOT NULL,
  PRIMARY KEY (run_id, attempt, phase, metric)
) WITHOUT ROWID;
INSERT INTO phase_stats_v10 (run_id, attempt, phase, metric, min, avg, max)
  SELECT run_id, 1, phase, metric, min, avg, max FROM phase_stats;
DROP TABLE phase_stats;
ALTER TABLE phase_stats_v10 RENAME TO phase_stats;
CREATE TRIGGER phase_stats_write_once BEFORE UPDATE ON phase_stats
BEGIN
  SELECT RAISE(ABORT, 'phase stats are write-once');
END;
CREATE TRIGGER phase_stats_keep BEFORE DELETE ON phase_stats
BEGIN
  SELECT RAISE(ABORT, 'phase stats are write-once');
END;
