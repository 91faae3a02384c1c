-- Retention (issue 61, daemon/store/retention.h): the runs holding a let-go artifact are found by its name, and a blob's
-- last reference by its hash, each through an index rather than a scan of every run's artifacts.
CREATE INDEX run_artifacts_by_name ON run_artifacts(name, run_id);
CREATE INDEX run_artifacts_by_sha ON run_artifacts(sha256);
