-- Multi-node runs (a config's "nodes": N): N machines, one agent each. The run's own phase marks (phase_marks)
-- are its slowest node's, written once every node has ended the phase; each node's marks are kept here,
-- write-once like the run's.
ALTER TABLE runs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1 CHECK (nodes BETWEEN 1 AND 64);
-- On a cluster scheduler (Slurm): the job's wait in the queue, submit to start on the scheduler's clock; part of
-- startup, reported apart. Written once.
ALTER TABLE runs ADD COLUMN queue_wait_s REAL;

CREATE TABLE node_marks (
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  node        INTEGER NOT NULL CHECK (node >= 0),
  phase       TEXT NOT NULL CHECK (phase IN ('startup', 'install', 'load_data', 'start', 'learn', 'verify',
                'save', 'poweroff')),
  mark        TEXT NOT NULL CHECK (mark IN ('begin', 'end')),
  t           REAL NOT NULL,
  clock       TEXT NOT NULL CHECK (clock IN ('daemon', 'agent')),
  received_at REAL NOT NULL,
  attrs       TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, node, phase, mark)
) WITHOUT ROWID;

CREATE TRIGGER node_marks_write_once BEFORE UPDATE ON node_marks
BEGIN
  SELECT RAISE(ABORT, 'phase marks are write-once');
END;

CREATE TRIGGER node_marks_keep BEFORE DELETE ON node_marks
BEGIN
  SELECT RAISE(ABORT, 'phase marks are write-once');
END;
