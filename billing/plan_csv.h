// Offline planning from a CSV of measured runs: the core of `tsumd plan --from-csv FILE`. Pure: the caller
// reads the file.
//
// CSV: a header naming the columns, then one row per measured run; rows with the same config are repetitions.
// Required columns (any order):
//   config,provider,instance_type,cores,gpus,price_per_hour,
//   startup,install,load_data,start,learn,verify,save,poweroff          (seconds)
// Optional columns: gpu_type, family (or its older name cpu_family), memory_gib (per machine), nodes (machines
// of a multi-node run, price_per_hour being all of them), cpu_model, image_cached (0/1/true/false), currency,
// epochs_done, images_done (a partial run, see measured_run.h). Blank lines and lines starting with '#' are skipped; fields may be
// double-quoted. Every error names the line: wrong field count, a non-number, a negative number, a missing
// or unknown header column, an empty file, or a config whose rows disagree on its machine or price.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/prices/billing_rule.h"
#include "billing/measured_run.h"
#include "billing/planner.h"
#include "billing/model/predictor.h"
#include "common/result.h"

namespace tsum::billing {

struct CsvRun {
  int line = 0;  // 1-based line in the CSV text
  MeasuredRun run;
  double price_per_hour = 0;
  std::string currency;  // "" when the CSV has no currency column
};

Result<std::vector<CsvRun>> parse_runs_csv(std::string_view csv_text);

struct CsvPlanOptions {
  std::string billing;                  // rule spec for every config; "" = each provider's rule (rules.json),
                                        // or per_second_60s_min for a provider without one
  std::vector<BillingRule> user_rules;  // extra rules (load_rules_file), consulted before the shipped ones
  std::string currency = "USD";         // when the CSV has no currency column
  Workload workload;                    // epochs and images per epoch of a full run
  PredictorOptions predictor;
};

// Ranks the CSV's configs for req: {"objective": ..., "ranked": [{"config", "t_sum", "billed_s", "cost",
// ...}, ...]} best first (see plan_to_json), plus "runs" (rows read).
Result<nlohmann::json> plan_from_csv(std::string_view csv_text, const PlanRequest& req, const CsvPlanOptions& opt = {});

}  // namespace tsum::billing
