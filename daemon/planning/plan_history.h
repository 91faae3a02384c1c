// What the planner learns from, kept as runs finish (issue 61; sql/0015_plan_samples.sql): record_plan_sample writes
// a finished run's row when it is settled; plan_history reads a workload's rows. A plan of an experiment with
// 100,000 runs behind it reads at most kPlanSamplesPerConfig rows of each config, through an index, instead of
// building the view of every run of every experiment with the same workload.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/measured_run.h"
#include "common/result.h"
#include "daemon/store/db.h"
#include "daemon/store/store.h"

namespace tsum::daemon {

// The newest done runs of each config a plan learns from. A thousand measurements of one config pin its mean and
// spread far below what a config's runs vary by; older ones add time to every plan and nothing to its choice.
inline constexpr int kPlanSamplesPerConfig = 1000;

struct PlanHistory {
  std::vector<billing::MeasuredRun> runs;  // done runs, as one machine's run of the workload
  std::vector<double> restarts;            // restart overheads of resumed attempts (spot), seconds
  int warm = 0, cold = 0;                  // of `runs`: install and load_data found the machine's cache, or not
};

// Writes (or rewrites) the samples of the finished run `view` (as GET /v1/runs/{id} shows it): its phases and
// restarts, and its serving curve; a run that measured nothing and was never resumed leaves none. Run inside the
// caller's transaction.
Status record_plan_sample(Db& db, Store& store, const nlohmann::json& view);

// The samples of every experiment whose workload is `workload` (Workload::to_json): per config the newest
// `per_config` measured runs, and the restarts of the same rows.
Result<PlanHistory> plan_history(Db& db, const nlohmann::json& workload, int per_config = kPlanSamplesPerConfig);

// The newest done runs (as GET /v1/runs lists them, oldest first) of every experiment whose workload is the serving
// `workload` that measured a serving curve: what a serving plan learns from.
inline constexpr int kServingSamples = 5000;
Result<std::vector<nlohmann::json>> serving_history(Db& db, const nlohmann::json& workload,
                                                    int limit = kServingSamples);

}  // namespace tsum::daemon
