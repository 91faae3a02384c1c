-- A serving plan's inputs, kept as runs finish (issue 61), as plan_samples keeps a training plan's: each done run
-- that measured a serving curve leaves its view here when it is settled (daemon/planning/plan_history.h), without its epochs
-- and resource statistics. A serving plan reads its workload's newest rows through the index, instead of building
-- the view of every run of every experiment.
CREATE TABLE serving_samples (
  run_id      INTEGER PRIMARY KEY REFERENCES runs(id),
  workload_id INTEGER NOT NULL REFERENCES plan_workloads(id),
  view        TEXT NOT NULL  -- the run as GET /v1/runs lists it (JSON)
);
CREATE INDEX serving_samples_by_workload ON serving_samples(workload_id, run_id);
INSERT OR IGNORE INTO run_settle SELECT id FROM runs WHERE status = 'done';
