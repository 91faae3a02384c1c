-- The dispatcher's reads (issue 61): which experiments have queued runs, from the kept counters through an index
-- of their own, so a dispatch reads the head of each experiment's queue, not every queued run.
CREATE INDEX run_counts_queued ON run_counts(status, experiment_id) WHERE n > 0;
