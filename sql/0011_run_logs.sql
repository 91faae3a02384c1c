-- A run's output (issue 52): what its job, or tsum-train, wrote to stdout and stderr, line by line, as its agents
-- sent it. Each source (one machine of one attempt, "a1n0") numbers its lines from 0, and run_log_sources holds
-- the next number the daemon expects from it: a line sent again is dropped, and an agent whose connection broke
-- resends from there. A run keeps its first and its last lines (daemon/agent/run_logs.h: the cap); `next` still counts
-- the ones dropped in between.
CREATE TABLE run_log_lines (
  seq    INTEGER PRIMARY KEY,      -- arrival order, across runs and sources
  run_id INTEGER NOT NULL REFERENCES runs(id),
  source TEXT NOT NULL,
  n      INTEGER NOT NULL,         -- the line's number in its source
  time   REAL NOT NULL,            -- daemon clock: when the machine wrote it
  line   TEXT NOT NULL
);
CREATE INDEX run_log_lines_by_run ON run_log_lines(run_id, seq);
CREATE TABLE run_log_sources (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  source TEXT NOT NULL,
  next   INTEGER NOT NULL,
  PRIMARY KEY (run_id, source)
) WITHOUT ROWID;

-- A folder job's folder (POST /v1/workdirs): a gzip tar of its files, kept as a blob by its sha256, which the
-- job's workload names ("workdir": "sha256:HEX") and its machines fetch.
CREATE TABLE workdirs (
  sha256     TEXT PRIMARY KEY,
  bytes      INTEGER NOT NULL,
  files      INTEGER NOT NULL,
  created_at REAL NOT NULL
) WITHOUT ROWID;
