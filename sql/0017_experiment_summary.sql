-- An experiment's summary, kept as runs finish (issue 61): per config, each phase, t_sum and the cost under each
-- rule as {n, mean, stderr, min, max} over its done runs. GET /v1/experiments/{id} read every run's view to build it.
-- Now a done run leaves its numbers in run_values when it is settled (daemon/views/totals.h), and the triggers below add
-- them to summary_values; the summary reads an experiment's rows there (configs x 13 or so), whatever its runs.
CREATE TABLE run_values (
  experiment_id INTEGER NOT NULL,
  config_index  INTEGER NOT NULL,
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  name          TEXT NOT NULL,  -- 't_sum', a phase's name, or 'cost:' and a billing rule's name
  value         REAL NOT NULL,
  currency      TEXT,           -- a cost's
  PRIMARY KEY (experiment_id, config_index, run_id, name)
) WITHOUT ROWID;
-- Sums of each value less the first one seen (`shift`), so a variance of values far from zero does not cancel.
CREATE TABLE summary_values (
  experiment_id INTEGER NOT NULL,
  config_index  INTEGER NOT NULL,
  name          TEXT NOT NULL,
  n             INTEGER NOT NULL,
  shift         REAL NOT NULL,
  s1            REAL NOT NULL,  -- sum of (value - shift)
  s2            REAL NOT NULL,  -- sum of (value - shift)^2
  lo            REAL,
  hi            REAL,
  currency      TEXT,
  PRIMARY KEY (experiment_id, config_index, name)
) WITHOUT ROWID;
-- Each config as its latest done run showed it (a run moved to another region shows where it ran).
CREATE TABLE summary_configs (
  experiment_id INTEGER NOT NULL,
  config_index  INTEGER NOT NULL,
  config        TEXT NOT NULL,  -- JSON
  PRIMARY KEY (experiment_id, config_index)
) WITHOUT ROWID;
CREATE TRIGGER run_values_add AFTER INSERT ON run_values
BEGIN
  INSERT INTO summary_values VALUES (NEW.experiment_id, NEW.config_index, NEW.name, 1, NEW.value, 0, 0, NEW.value,
                                     NEW.value, NEW.currency)
    ON CONFLICT (experiment_id, config_index, name) DO UPDATE SET
      n = n + 1, s1 = s1 + (excluded.shift - shift), s2 = s2 + (excluded.shift - shift) * (excluded.shift - shift),
      lo = CASE WHEN lo IS NULL OR excluded.lo < lo THEN excluded.lo ELSE lo END,
      hi = CASE WHEN hi IS NULL OR excluded.hi > hi THEN excluded.hi ELSE hi END,
      currency = excluded.currency;
END;
-- A run settled again (a late mark) has its old values taken out; an extreme is found again among the rest of its
-- config's values only when it was the one taken out.
CREATE TRIGGER run_values_take AFTER DELETE ON run_values
BEGIN
  UPDATE summary_values SET
      n = n - 1, s1 = s1 - (OLD.value - shift), s2 = s2 - (OLD.value - shift) * (OLD.value - shift),
      lo = CASE WHEN OLD.value <= lo THEN (SELECT MIN(value) FROM run_values WHERE experiment_id = OLD.experiment_id
                AND config_index = OLD.config_index AND name = OLD.name) ELSE lo END,
      hi = CASE WHEN OLD.value >= hi THEN (SELECT MAX(value) FROM run_values WHERE experiment_id = OLD.experiment_id
                AND config_index = OLD.config_index AND name = OLD.name) ELSE hi END
    WHERE experiment_id = OLD.experiment_id AND config_index = OLD.config_index AND name = OLD.name;
END;
-- The runs that finished before these tables existed are settled again, in the background, to fill them.
INSERT OR IGNORE INTO run_settle SELECT id FROM runs WHERE status = 'done';
