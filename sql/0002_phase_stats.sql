-- Resource statistics per phase (CPU %, RSS, disk read/write rates, GPU util/memory), min/avg/max, as the agent
-- measured them inside the instance and sent them with the phase's end mark. Written once, like the marks.
CREATE TABLE phase_stats (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  phase  TEXT NOT NULL,
  metric TEXT NOT NULL,
  min    REAL NOT NULL,
  avg    REAL NOT NULL,
  max    REAL NOT NULL,
  PRIMARY KEY (run_id, phase, metric)
) WITHOUT ROWID;

CREATE TRIGGER phase_stats_write_once BEFORE UPDATE ON phase_stats
BEGIN
  SELECT RAISE(ABORT, 'phase stats are write-once');
END;
CREATE TRIGGER phase_stats_keep BEFORE DELETE ON phase_stats
BEGIN
  SELECT RAISE(ABORT, 'phase stats are write-once');
END;
