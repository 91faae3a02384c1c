-- A daemon that runs for years (issue 61): what a request reads must not grow with the runs ever finished.
--
-- Indexes for the paged, filtered lists (GET /v1/runs, GET /v1/experiments): each filter walks its own index in
-- id order, so a page reads the rows it returns and no more.
CREATE INDEX runs_by_experiment ON runs(experiment_id);
CREATE INDEX runs_by_experiment_status ON runs(experiment_id, status);
CREATE INDEX runs_by_provider ON runs(provider);
CREATE INDEX runs_by_type ON runs(instance_type);
CREATE INDEX runs_by_created ON runs(created_at);
CREATE INDEX experiments_by_schedule ON experiments(schedule_id);
CREATE INDEX experiments_by_search ON experiments(search_id);
CREATE INDEX experiments_by_created ON experiments(created_at);
CREATE INDEX run_attempts_by_type ON run_attempts(provider, instance_type);

-- Counters the database keeps as runs change, so /metrics and the lists' totals read a row per status, not a row
-- per run: runs by experiment and status, and by status alone.
CREATE TABLE run_counts (
  experiment_id INTEGER NOT NULL,
  status        TEXT NOT NULL,
  n             INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, status)
) WITHOUT ROWID;
CREATE TABLE status_counts (
  status TEXT PRIMARY KEY,
  n      INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO run_counts SELECT experiment_id, status, COUNT(*) FROM runs GROUP BY experiment_id, status;
INSERT INTO status_counts SELECT status, COUNT(*) FROM runs GROUP BY status;

CREATE TRIGGER run_counts_insert AFTER INSERT ON runs
BEGIN
  INSERT INTO run_counts VALUES (NEW.experiment_id, NEW.status, 1)
    ON CONFLICT (experiment_id, status) DO UPDATE SET n = n + 1;
  INSERT INTO status_counts VALUES (NEW.status, 1) ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER run_counts_update AFTER UPDATE OF status ON runs WHEN OLD.status <> NEW.status
BEGIN
  UPDATE run_counts SET n = n - 1 WHERE experiment_id = OLD.experiment_id AND status = OLD.status;
  INSERT INTO run_counts VALUES (NEW.experiment_id, NEW.status, 1)
    ON CONFLICT (experiment_id, status) DO UPDATE SET n = n + 1;
  UPDATE status_counts SET n = n - 1 WHERE status = OLD.status;
  INSERT INTO status_counts VALUES (NEW.status, 1) ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER run_counts_delete AFTER DELETE ON runs
BEGIN
  UPDATE run_counts SET n = n - 1 WHERE experiment_id = OLD.experiment_id AND status = OLD.status;
  UPDATE status_counts SET n = n - 1 WHERE status = OLD.status;
END;

-- The histogram of measured phase durations (tsum_phase_seconds), kept as each phase's second mark arrives. A
-- bucket is the number of bounds below the duration (0 .. 12; 12 is +Inf); the bounds are daemon/views/metrics.cpp's.
-- Marks are write-once, so each (run, attempt, phase) is counted once, whichever of its marks comes last.
CREATE TABLE phase_bounds (le REAL PRIMARY KEY) WITHOUT ROWID;
INSERT INTO phase_bounds VALUES (0.1), (0.5), (1), (2.5), (5), (10), (30), (60), (300), (900), (3600), (14400);
CREATE TABLE phase_hist (
  phase  TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  n      INTEGER NOT NULL,
  sum    REAL NOT NULL,
  PRIMARY KEY (phase, bucket)
) WITHOUT ROWID;
INSERT INTO phase_hist
  SELECT b.phase, (SELECT COUNT(*) FROM phase_bounds WHERE le < e.t - b.t), COUNT(*), SUM(e.t - b.t)
  FROM phase_marks b JOIN phase_marks e ON e.run_id = b.run_id AND e.attempt = b.attempt AND e.phase = b.phase
    AND e.mark = 'end' AND e.clock = b.clock
  WHERE b.mark = 'begin' GROUP BY 1, 2;

CREATE TRIGGER phase_hist_end AFTER INSERT ON phase_marks WHEN NEW.mark = 'end'
BEGIN
  INSERT INTO phase_hist (phase, bucket, n, sum)
    SELECT NEW.phase, (SELECT COUNT(*) FROM phase_bounds WHERE le < NEW.t - b.t), 1, NEW.t - b.t
    FROM phase_marks b WHERE b.run_id = NEW.run_id AND b.attempt = NEW.attempt AND b.phase = NEW.phase
      AND b.mark = 'begin' AND b.clock = NEW.clock
    ON CONFLICT (phase, bucket) DO UPDATE SET n = n + 1, sum = sum + excluded.sum;
END;
CREATE TRIGGER phase_hist_begin AFTER INSERT ON phase_marks WHEN NEW.mark = 'begin'
BEGIN
  INSERT INTO phase_hist (phase, bucket, n, sum)
    SELECT NEW.phase, (SELECT COUNT(*) FROM phase_bounds WHERE le < e.t - NEW.t), 1, e.t - NEW.t
    FROM phase_marks e WHERE e.run_id = NEW.run_id AND e.attempt = NEW.attempt AND e.phase = NEW.phase
      AND e.mark = 'end' AND e.clock = NEW.clock
    ON CONFLICT (phase, bucket) DO UPDATE SET n = n + 1, sum = sum + excluded.sum;
END;

-- What a finished run cost, settled once after it finishes (daemon/views/totals.h): under each of its experiment's
-- rules (run_costs: the spend), and its instance under its provider's own rule (run_charges: what the budget and
-- tsum_billed_total count). run_settle holds the runs to settle: every run that just finished, and a finished
-- run that took a late mark (settled again: its old figures are taken out by the triggers below).
CREATE TABLE run_settle (run_id INTEGER PRIMARY KEY);
INSERT INTO run_settle SELECT id FROM runs WHERE status IN ('done', 'failed', 'cancelled');
CREATE TRIGGER run_settle_finished AFTER UPDATE OF status ON runs
  WHEN NEW.status IN ('done', 'failed', 'cancelled') AND OLD.status <> NEW.status
BEGIN
  INSERT OR IGNORE INTO run_settle VALUES (NEW.id);
END;
CREATE TRIGGER run_settle_late_mark AFTER INSERT ON phase_marks
  WHEN (SELECT status FROM runs WHERE id = NEW.run_id) IN ('done', 'failed', 'cancelled')
BEGIN
  INSERT OR IGNORE INTO run_settle VALUES (NEW.run_id);
END;

CREATE TABLE run_costs (
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  rule          TEXT NOT NULL,
  experiment_id INTEGER NOT NULL,
  currency      TEXT NOT NULL,
  amount        REAL NOT NULL,
  PRIMARY KEY (run_id, rule)
) WITHOUT ROWID;
CREATE TABLE run_charges (
  run_id   INTEGER PRIMARY KEY REFERENCES runs(id),
  provider TEXT NOT NULL,
  currency TEXT NOT NULL,
  month    REAL NOT NULL,  -- the UTC calendar month its instance started in (its first second, unix time)
  amount   REAL NOT NULL
);
-- Their sums: spend by experiment and rule, spend by rule, charges by provider and month.
CREATE TABLE experiment_spend (
  experiment_id INTEGER NOT NULL,
  rule          TEXT NOT NULL,
  currency      TEXT NOT NULL,
  amount        REAL NOT NULL,
  runs          INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, rule, currency)
) WITHOUT ROWID;
CREATE TABLE spend_totals (
  rule     TEXT NOT NULL,
  currency TEXT NOT NULL,
  amount   REAL NOT NULL,
  PRIMARY KEY (rule, currency)
) WITHOUT ROWID;
CREATE TABLE charge_totals (
  provider TEXT NOT NULL,
  currency TEXT NOT NULL,
  month    REAL NOT NULL,
  amount   REAL NOT NULL,
  PRIMARY KEY (provider, currency, month)
) WITHOUT ROWID;

CREATE TRIGGER run_costs_add AFTER INSERT ON run_costs
BEGIN
  INSERT INTO experiment_spend VALUES (NEW.experiment_id, NEW.rule, NEW.currency, NEW.amount, 1)
    ON CONFLICT (experiment_id, rule, currency) DO UPDATE SET amount = amount + excluded.amount, runs = runs + 1;
  INSERT INTO spend_totals VALUES (NEW.rule, NEW.currency, NEW.amount)
    ON CONFLICT (rule, currency) DO UPDATE SET amount = amount + excluded.amount;
END;
CREATE TRIGGER run_costs_take AFTER DELETE ON run_costs
BEGIN
  UPDATE experiment_spend SET amount = amount - OLD.amount, runs = runs - 1
    WHERE experiment_id = OLD.experiment_id AND rule = OLD.rule AND currency = OLD.currency;
  UPDATE spend_totals SET amount = amount - OLD.amount WHERE rule = OLD.rule AND currency = OLD.currency;
END;
CREATE TRIGGER run_charges_add AFTER INSERT ON run_charges
BEGIN
  INSERT INTO charge_totals VALUES (NEW.provider, NEW.currency, NEW.month, NEW.amount)
    ON CONFLICT (provider, currency, month) DO UPDATE SET amount = amount + excluded.amount;
END;
CREATE TRIGGER run_charges_take AFTER DELETE ON run_charges
BEGIN
  UPDATE charge_totals SET amount = amount - OLD.amount
    WHERE provider = OLD.provider AND currency = OLD.currency AND month = OLD.month;
END;
