-- Placement (issue 54): a spot run's recovery may move to another region or cloud. runs.region and runs.zone are
-- where the current attempt goes ('' the provider's default region, its own zone); runs.currency follows the
-- attempt's provider like runs.provider. Each attempt keeps its region, its currency and the offers it skipped
-- because their capacity had just run out ([{"offer", "error"}], in order).
ALTER TABLE runs ADD COLUMN region TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN zone TEXT NOT NULL DEFAULT '';
ALTER TABLE run_attempts ADD COLUMN region TEXT NOT NULL DEFAULT '';
ALTER TABLE run_attempts ADD COLUMN currency TEXT NOT NULL DEFAULT 'USD';
ALTER TABLE run_attempts ADD COLUMN skipped TEXT NOT NULL DEFAULT '[]';
