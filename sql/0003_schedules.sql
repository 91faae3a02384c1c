-- Schedules: an experiment body fired by a cron expression in a time zone. One firing per due time, kept in
-- schedule_firings (so a crash between firing and bookkeeping cannot fire the same due time twice).
CREATE TABLE schedules (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL,
  cron         TEXT NOT NULL,
  timezone     TEXT NOT NULL,
  experiment   TEXT NOT NULL,            -- the experiment body, validated when the schedule was written
  budget       REAL,                     -- spend cap per firing, in the offers' currency; NULL: none
  missed       TEXT NOT NULL CHECK (missed IN ('skip', 'catch_up')),
  enabled      INTEGER NOT NULL DEFAULT 1,
  next_fire_at REAL,                     -- unix seconds; NULL when the expression never fires again
  deleted_at   REAL,
  created_at   REAL NOT NULL,
  updated_at   REAL NOT NULL
);

CREATE TABLE schedule_firings (
  schedule_id   INTEGER NOT NULL REFERENCES schedules(id),
  due_at        REAL NOT NULL,
  fired_at      REAL NOT NULL,
  outcome       TEXT NOT NULL CHECK (outcome IN ('fired', 'skipped', 'failed')),
  experiment_id INTEGER REFERENCES experiments(id),
  detail        TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (schedule_id, due_at)
) WITHOUT ROWID;

ALTER TABLE experiments ADD COLUMN schedule_id INTEGER REFERENCES schedules(id);
