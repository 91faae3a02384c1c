// An experiment's summary, kept as runs finish (issue 61; sql/0017_experiment_summary.sql): record_run_values
// writes a done run's numbers when it is settled (daemon/views/totals.h), the database adds them to per-config sums, and
// experiment_summary reads those sums: a few rows per config, whatever the number of runs.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/prices/billing_rule.h"
#include "common/result.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

// Writes (or rewrites) the values of the finished run `view` (as GET /v1/runs/{id} shows it): each phase, t_sum and
// the cost under each rule of a done run with a t_sum; none for any other run. Run inside the caller's transaction.
Status record_run_values(Db& db, const nlohmann::json& view);

// Per config over its done runs, every phase, t_sum and cost per rule of `rules` as {n, mean, stderr, min, max}
// (plus mean_t_sum and mean_cost); the cheapest config per rule by mean cost (ties go to the faster) and the fastest
// by mean t_sum: {"configs", "cheapest", "fastest"}.
Result<nlohmann::json> experiment_summary(Db& db, int64_t experiment_id, const std::vector<billing::BillingRule>& rules);

}  // namespace tsum::daemon
