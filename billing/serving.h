// Pricing a served model (issue 41): which measured machine serves a workload at a p99 bound for the least money
// per request. Pure: the caller hands in each done run's measured curve (the load client's levels) and price.
//
// A configuration's curve is its runs' levels, aggregated per level (a concurrency or a request rate) over the
// repetitions: mean throughput with its standard error, mean p99. Its sustained rate is the highest mean
// throughput of a level whose mean p99 meets the bound (a level without enough samples for a p99 meets none).
// The server is up for the whole period (`period_s`, default a month of 730 h), billed under its rule (a monthly
// cap, clock hours and minimums included), so its hourly cost is cost(rule, price, period) / period hours, and
//   cost per million requests = hourly cost x 1e6 / (3600 x sustained rate).
// Given a rate R, a configuration needs replicas = ceil(R / sustained), and its cost per million is that of the
// fleet at R: replicas x hourly cost x 1e6 / (3600 R). Configurations rank by that cost; one with no level under
// the bound is infeasible, listed with the best p99 it reached.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/prices/billing_rule.h"

namespace tsum::billing {

struct ServingLevel {
  std::string mode = "concurrency";  // concurrency | rate
  double level = 0;                  // the concurrency, or the target rate (requests/s)
  double throughput_rps = 0;
  double images_per_s = 0;
  std::optional<double> p99_ms;      // none: too few samples for one
};

// One done run's curve, as its load client measured it.
struct ServingRun {
  std::string config;   // what the plan calls it: the machine and the workload fields its experiment varied
  std::string machine;  // provider/instance_type
  nlohmann::json settings = nlohmann::json::object();  // the server's: max_batch, max_delay_ms, threads, instances
  double hourly_price = 0;  // of the server's machine
  std::string currency;
  BillingRule rule;
  std::vector<ServingLevel> levels;
};

struct ServingRequest {
  double p99_ms = 0;               // the bound, > 0
  std::optional<double> rate;      // requests/s to serve
  double period_s = kMonthS;       // how long the service is up, for the billing rule
};

// One level of a configuration's aggregated curve.
struct CurvePoint {
  std::string mode;
  double level = 0;
  int runs = 0;
  double throughput_rps = 0, throughput_stderr = 0, images_per_s = 0;
  std::optional<double> p99_ms;  // the runs' mean; none when a run had too few samples for one
  bool meets = false;
};

struct ServingChoice {
  std::string config;
  std::string machine;
  nlohmann::json settings = nlohmann::json::object();
  double hourly_price = 0;   // the offer's
  double billed_hourly = 0;  // under the rule over the period
  std::string currency, rule;
  int runs = 0;
  std::vector<CurvePoint> curve;
  std::optional<std::size_t> pick;  // the curve's point that sets the sustained rate; none: infeasible
  double sustained_rps = 0;
  double cost_per_million = 0;
  int replicas = 1;                 // for the requested rate (1 without one)
  double fleet_hourly = 0;          // replicas x billed_hourly
  std::optional<double> best_p99_ms;  // infeasible: the lowest p99 it reached
  std::string reason;
};

struct ServingPlan {
  std::vector<ServingChoice> ranked;      // cheapest per million requests first
  std::vector<ServingChoice> infeasible;  // no level under the bound
};

// invalid_argument for a bound or rate that is not positive, or no runs.
Result<ServingPlan> plan_serving(const std::vector<ServingRun>& runs, const ServingRequest& request);

// The load client's levels (a run's metrics.serving) as ServingLevels; levels it cannot read are skipped.
std::vector<ServingLevel> serving_levels(const nlohmann::json& levels);

nlohmann::json serving_plan_to_json(const ServingPlan& plan, const ServingRequest& request);

// A server's settings in words: "max_batch=8 max_delay_ms=2 threads=2 instances=1" (threads null: "all", the
// machine's CPUs); empty without settings.
std::string describe_settings(const nlohmann::json& settings);

}  // namespace tsum::billing
