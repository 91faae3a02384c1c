-- The planner's inputs, kept as runs finish (issue 61). A plan learns from every run of every experiment with the
-- same workload; it read them by building each run's view. Now each finished run leaves one row here when it is
-- settled (daemon/views/totals.h, daemon/planning/plan_history.h): a done run's phases as one machine's run of the workload, and
-- any run's restart overheads. A plan reads its workload's rows, the newest of each config first, through an index.
CREATE TABLE plan_workloads (
  id       INTEGER PRIMARY KEY,
  workload TEXT NOT NULL UNIQUE  -- an experiment's workload as JSON, as plans compare them
);
CREATE TABLE plan_samples (
  run_id        INTEGER PRIMARY KEY REFERENCES runs(id),
  workload_id   INTEGER NOT NULL REFERENCES plan_workloads(id),
  config        TEXT NOT NULL,     -- provider/instance_type, and /xN for a run of N machines
  provider      TEXT NOT NULL,
  instance_type TEXT NOT NULL,
  nodes         INTEGER NOT NULL,
  machine       TEXT NOT NULL,     -- the run's machine as its offer described it (JSON)
  measured      INTEGER NOT NULL,  -- 1: done, with all eight phases below; 0: only its restarts count
  cold          INTEGER NOT NULL,  -- its install or load_data downloaded (daemon/planning/spot_risk.h ran_cold)
  startup REAL, install REAL, load_data REAL, start REAL, learn REAL, verify REAL, save REAL, poweroff REAL,
  restarts      TEXT               -- its resumed attempts' restart overheads, a JSON array; NULL: none
);
CREATE INDEX plan_samples_by_config ON plan_samples(workload_id, config, run_id);
-- The runs that finished before this table existed are settled again, in the background, to fill it.
INSERT OR IGNORE INTO run_settle SELECT id FROM runs WHERE status IN ('done', 'failed', 'cancelled');
