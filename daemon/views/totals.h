// The sums /metrics, the experiment list and the budget read, kept as runs change rather than recomputed from
// every run ever finished (issue 61).
//
// Counts by status and the phase histogram are kept by the database itself (triggers, sql/0013_totals.sql). What
// a finished run cost needs the billing rules, so it is settled here, once, after the run finishes: settle() takes
// the runs the database queued in run_settle (a run that just finished, or a finished one that took a late mark),
// writes each one's cost under its experiment's rules (run_costs, from its view) and its instance's charge under
// its provider's rule (run_charges, from the budget), and the triggers add them to the sums; it also writes what the
// planner learns from the run (daemon/planning/plan_history.h) and a done run's numbers for its experiment's summary
// (daemon/views/experiment_summary.h). A run settled again has its old figures taken out first. The
// daemon settles every second, and a read of the sums (/metrics, the lists, a detail, a plan) settles one batch
// first: it waits for at most a batch of finished runs, never for a backlog (the runs a new migration queues to be
// settled again are done in the background, a batch at a time).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/schedules/budget.h"
#include "daemon/store/db.h"
#include "daemon/views/views.h"

namespace tsum::daemon {

class Totals {
 public:
  Totals(Db& db, Views& views, Budget& budget) : db_(db), views_(views), budget_(budget) {}

  // Settles up to `limit` queued runs in one transaction. Returns how many it settled.
  Result<int> settle(int limit = 500);
  // Settles until none is queued.
  Status settle_all();

  // Spend of finished runs under their experiments' rules, by (rule, currency).
  Result<std::map<std::pair<std::string, std::string>, double>> spend();
  // One experiment's spend by rule: {amount, currency, runs} (runs: how many finished runs it sums).
  struct Spend {
    std::string rule, currency;
    double amount = 0;
    int64_t runs = 0;
  };
  Result<std::vector<Spend>> experiment_spend(int64_t experiment_id);
  // One experiment's summary under its `rules`, from the sums kept of its done runs (daemon/views/experiment_summary.h).
  Result<nlohmann::json> experiment_summary(int64_t experiment_id, const std::vector<billing::BillingRule>& rules);
  // The phase histogram: per phase, per bucket (0 .. bounds; the last is +Inf) {count, sum}.
  struct Bucket {
    std::string phase;
    int bucket = 0;
    int64_t n = 0;
    double sum = 0;
  };
  Result<std::vector<Bucket>> phase_histogram();

 private:
  Status settle_run(int64_t run_id);

  Db& db_;
  Views& views_;
  Budget& budget_;
};

}  // namespace tsum::daemon
