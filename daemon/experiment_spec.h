// The experiment request body, parsed and validated. Unknown fields are errors, so a typo is reported
// instead of silently ignored.
//
// {"name": "...",
//  "workload": {"model": "mnist_cnn", "dataset": "fashion-mnist", "epochs": 1, "limit": 2000,
//               (or "dataset": {"url": "https://...", "sha256": "...", "format": "idx", "name": "..."})
//               "test_limit": 1000, "batch": 128, "threads": 0},
//  "configs": [{"provider": "local", "instance_type": "local-1c"}, ...],
//  "repetitions": 10,
//  "billing": ["per_second_60s_min", "per_minute", "per_10_minutes", "per_hour", "step:S,min:M"],
//  "budget": 5.0, "deadline": 3600}
//
// A config is a matrix when a field holds a list: it expands to the product of its lists, e.g.
//   {"provider": "local", "cores": [1, 2], "runtime": ["native", "docker"]}   → 4 configs
//   {"provider": "aws", "instance_type": ["c6i.2xlarge", "g5.xlarge"]}        → 2 configs
// `cores` (local only) names local-<N>c. `runtime` is native (default) or docker. repetitions defaults to
// 10, as the seed ran every configuration. `budget` (optional, in the offers' currency) caps what the
// experiment's instances may cost (daemon/budget.h); `deadline` (optional, seconds) bounds each run from the
// create call to its save, and with the budget prices a run's worst case.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "billing/billing_rule.h"
#include "common/result.h"

namespace tsum::daemon {

struct Workload {
  std::string model = "mnist_cnn";
  std::string dataset = "fashion-mnist";  // a registered data set's name (or the URL one's, below)
  std::string dataset_url;     // a data set the agent fetches itself, with its sha256 and format; empty: none
  std::string dataset_sha256;
  std::string dataset_format;
  int epochs = 1;
  std::optional<int> limit;
  std::optional<int> test_limit;
  std::optional<int> batch;
  std::optional<int> threads;  // default: the instance's CPUs
  std::string image;           // the container image with tsum-train (the Dockerfile's); docker runtime only

  // The tsum-train flags for this workload (without --data and --checkpoint).
  std::string train_args() const;
  nlohmann::json to_json() const;
};

struct RunConfig {
  std::string provider;
  std::string instance_type;
  std::string runtime = "native";  // or "docker"
};

inline constexpr int kDefaultRepetitions = 10;
inline constexpr size_t kMaxConfigs = 100;

struct ExperimentSpec {
  std::string name;
  Workload workload;
  std::vector<RunConfig> configs;
  int repetitions = 1;
  std::vector<billing::BillingRule> billing;
  std::optional<double> budget;   // spend cap over all the experiment's runs
  std::optional<int> deadline_s;  // per run; the daemon's run deadline when absent

  nlohmann::json to_json() const;
};

// Parses the JSON text of a request body. invalid_argument with a message naming the field on any
// malformed JSON, unknown field, wrong type or out-of-range value.
Result<ExperimentSpec> parse_experiment_spec(std::string_view body);
Result<ExperimentSpec> experiment_spec_from_json(const nlohmann::json& j);

}  // namespace tsum::daemon
