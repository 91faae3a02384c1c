// The room daemon/experiments/ owns what a user asks for: the experiment spec and its workload, parsed and checked at
// the door, the presets, and submit (a spec turned into queued runs, each config priced against its provider's
// offers). It calls config/ for the providers, the store to insert, runs/ (statuses), artifacts/ (data sets),
// providers/ and billing/prices/.
//
// The experiment request body, parsed and validated. Unknown fields are errors, so a typo is reported
// instead of silently ignored.
//
// {"name": "...",
//  "workload": {"model": "mnist_cnn", "dataset": "fashion-mnist", "optimizer": ["sgd", "adam"], ...}
//               (daemon/experiments/workload.h: every field, lists of alternatives)
//  "configs": [{"provider": "local", "instance_type": "local-1c"}, ...],
//  "repetitions": 10,
//  "billing": ["per_second_60s_min", "per_minute", "per_10_minutes", "per_hour", "step:S,min:M"],
//  "budget": 5.0, "deadline": 3600}
//
// A config is a matrix when a field holds a list: it expands to the product of its lists, e.g.
//   {"provider": "local", "cores": [1, 2], "runtime": ["native", "docker"]}   → 4 configs
//   {"provider": "aws", "instance_type": ["c6i.2xlarge", "g5.xlarge"]}        → 2 configs
// `cores` (local only) names local-<N>c. `runtime` is native (default) or docker. `nodes` (default 1, up to
// 64) trains on that many machines of the type at once, data-parallel, with `dist` ring (default), ps or ps-async:
//   {"provider": "aws", "instance_type": "c5.2xlarge", "nodes": [1, 2, 4], "dist": ["ring", "ps"]}  → 6 configs
// A serving workload ("kind": "serve") runs on two machines of the type, the server and its load client: its
// configs take no `nodes` (or 2) and no `dist`.
// `market` is on-demand (default) or spot:
//   {"provider": "gce", "instance_type": "n2-standard-8", "market": ["on-demand", "spot"]}         → 2 configs
// repetitions defaults to
// 10, as the seed ran every configuration. `budget` (optional, in the offers' currency) caps what the
// experiment's instances may cost (daemon/schedules/budget.h); `deadline` (optional, seconds) bounds each run from the
// create call to its save, and with the budget prices a run's worst case.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "billing/prices/billing_rule.h"
#include "common/result.h"
#include "daemon/experiments/workload.h"

namespace tsum::daemon {

struct RunConfig {
  std::string provider;
  std::string instance_type;
  std::string runtime = "native";  // or "docker"
  // Data-parallel training over `nodes` machines of the type (1: one machine), with `dist`: "ring" (all-reduce),
  // "ps" (a parameter server on node 0) or "ps-async" (its asynchronous form).
  int nodes = 1;
  std::string dist = "ring";
  // "on-demand" (default) or "spot": the cloud's spare capacity, cheaper, which it may take back (AWS, GCE, Azure,
  // Yandex; the other providers refuse it).
  std::string market = "on-demand";
  // A spot run's recovery (config field "spot_recovery"): an interrupted attempt is followed by another machine
  // of the same offer, resuming from the last checkpoint; from the attempt after `on_demand_after`
  // interruptions on (0: never) on on-demand capacity; an interruption beyond `max_interruptions` fails the run. tsum-train
  // checkpoints every `checkpoint_every_s` seconds too, so a machine gone without notice loses at most that.
  struct SpotRecovery {
    int max_interruptions = 6;
    int on_demand_after = 0;
    int checkpoint_every_s = 300;
    // Zones of the provider's region the attempts go to in turn (attempt k in zones[(k - 1) % n]), so a recovery
    // does not land where the capacity just ran out; empty: the provider's own zone every time.
    std::vector<std::string> zones = {};
    // Where a next attempt may go (docs/spot.md): "zone" (the same offer, in the next of `zones`), "region" (the
    // provider's offer of the type in any of its configured regions), "cloud" (any configured spot provider's offer
    // with at least the machine's vCPUs, memory and GPUs, priced in the run's currency). Among those allowed, the
    // cheapest by expected cost (price, interruption risk, restart) that has not just failed for capacity.
    std::string policy = "zone";
    // The most a next attempt's machine may cost an hour (the run's currency); nullopt: no cap.
    std::optional<double> max_price = std::nullopt;
    bool operator==(const SpotRecovery&) const = default;
  };
  SpotRecovery spot_recovery = {};
};

inline constexpr int kMaxNodes = 64;
inline constexpr size_t kMaxNameLength = 200;  // an experiment's name, and every other string field's

inline constexpr int kDefaultRepetitions = 10;
inline constexpr size_t kMaxConfigs = 100;
// A search's candidates are checked as an experiment's configs, up to this many (a catalog of three clouds has
// hundreds of offers); each probe is an experiment of one of them.
inline constexpr size_t kMaxSearchCandidates = 1000;
// An experiment's 'deadline' (and so a probe run's) is 1 s to 30 days; derived deadlines are clamped to it.
inline constexpr int kMaxDeadlineS = 30 * 24 * 3600;
// Every amount of money a request names (a budget, a probe budget) is at most this: a user's "no limit".
inline constexpr double kMaxMoney = 1e9;

// The experiment's variants are its configs times its workloads: variant v runs configs[v / workloads.size()]
// with workloads[v % workloads.size()]; a run's config_index is its variant.
struct ExperimentSpec {
  std::string name;
  nlohmann::json workload_request = nlohmann::json::object();  // as given, lists included
  std::vector<Workload> workloads;    // expanded: at least one
  std::vector<std::string> varied;    // the workload fields that take more than one value
  std::vector<RunConfig> configs;
  int repetitions = 1;
  std::vector<billing::BillingRule> billing;
  std::optional<double> budget;   // spend cap over all the experiment's runs
  std::optional<int> deadline_s;  // per run; the daemon's run deadline when absent

  size_t variants() const { return configs.size() * workloads.size(); }
  const RunConfig& config_of(size_t variant) const { return configs.at(variant / workloads.size()); }
  const Workload& workload_of(size_t variant) const { return workloads.at(variant % workloads.size()); }
  // The first workload: the one of an experiment whose workload has no lists.
  const Workload& workload() const { return workloads.front(); }

  nlohmann::json to_json() const;
};

// Parses the JSON text of a request body. invalid_argument with a message naming the field on any
// malformed JSON, unknown field, wrong type or out-of-range value.
Result<ExperimentSpec> parse_experiment_spec(std::string_view body);
// max_configs: the most variants (configs times workloads) the spec may expand to.
Result<ExperimentSpec> experiment_spec_from_json(const nlohmann::json& j, size_t max_configs = kMaxConfigs);

}  // namespace tsum::daemon
