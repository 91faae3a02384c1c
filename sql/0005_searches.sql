-- Adaptive searches (POST /v1/searches): the request, its status, the probes so far (one experiment each) and,
-- once finished, the search's result (billing/search/search.h search_to_json: recommendation, trace, plan).
CREATE TABLE searches (
  id         INTEGER PRIMARY KEY,
  request    TEXT NOT NULL,                 -- the validated request body
  status     TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
  reason     TEXT NOT NULL DEFAULT '',
  probes     TEXT NOT NULL DEFAULT '[]',    -- [{"config", "experiment_id", "run_id", "status", "t_sum"}]
  result     TEXT,                          -- NULL until done
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
