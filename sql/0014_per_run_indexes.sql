-- The dispatcher's reads (issue 61): which experiments have queued runs, from the kept counters through an index
-- of their own, so a dispatch reads the head of each experiment's queue, not every queued run.
CREATE INDEX run_counts_queued ON run_counts(status, experiment_id) WHERE n > 0;

-- A finished run's token is revoked by its run id, the admin and metrics tokens are listed by scope, and revoked
-- run tokens are let go by age (daemon/store/retention.h): each from an index, not a scan of one token per run ever
-- started.
CREATE INDEX tokens_by_run ON tokens(run_id) WHERE run_id IS NOT NULL;
CREATE INDEX tokens_by_scope ON tokens(scope, created_at) WHERE scope <> 'run';
CREATE INDEX tokens_revoked ON tokens(revoked_at) WHERE scope = 'run';
