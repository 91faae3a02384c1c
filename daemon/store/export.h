// Experiment export: one row per run with its config, every phase, t_sum, accuracy, cost under each rule and
// the resource min/avg/max of every inner phase. Built from the experiment JSON that Views produces, so the
// export and the API never disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tsum::daemon {

// The column names, in order, for an experiment billed under `rules`. An inference or serving experiment's export
// adds a column per figure per level after these (infer_b8_p99_ms, serve_c4_throughput_rps, serve_r20_p99_ms).
std::vector<std::string> export_columns(const std::vector<std::string>& rules);

// Rows as JSON objects keyed by column (null where a value is missing).
nlohmann::json export_rows(const nlohmann::json& experiment);

// The same rows as RFC 4180 CSV with a header line; empty cells for missing values.
std::string export_csv(const nlohmann::json& experiment);

}  // namespace tsum::daemon
