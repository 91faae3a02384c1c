// Pricing a served model (billing/serving.h): the sustained rate under the bound, cost per million requests under
// the billing rule, replicas for a rate, repetitions aggregated per level, infeasible configurations.
#include <doctest/doctest.h>

#include "billing/serving.h"
#include "tests/support/billing_rule.h"

using namespace tsum::billing;
using tsum::billing::testing::rule;

namespace {


ServingRun served(std::string config, double price, std::vector<std::tuple<double, double, std::optional<double>>> levels,
               const char* rule_name = "per_second_60s_min") {
  ServingRun r;
  r.config = std::move(config);
  r.hourly_price = price;
  r.currency = "USD";
  r.rule = rule(rule_name);
  for (auto [c, rps, p99] : levels) r.levels.push_back({"concurrency", c, rps, rps, p99});
  return r;
}

}  // namespace

TEST_CASE("serving: the highest throughput under the bound sets the rate; cost per million is the billed hour over it") {
  // small: 40 req/s at p99 20 ms, 70 at 90 ms, 80 at 300 ms; big: 150 at 30 ms, 200 at 150 ms.
  std::vector<ServingRun> runs = {served("aws/small", 0.10, {{1, 40, 20.0}, {2, 70, 90.0}, {4, 80, 300.0}}),
                                  served("aws/big", 0.40, {{1, 150, 30.0}, {4, 200, 150.0}}),
                                  served("aws/slow", 0.05, {{1, 5, 400.0}, {2, 6, std::nullopt}})};
  auto plan = plan_serving(runs, {.p99_ms = 100});
  REQUIRE(plan.ok());
  REQUIRE(plan->ranked.size() == 2);
  // small: 0.10 $/h over 70 req/s = 0.10e6 / (3600 x 70) = 0.3968 $ per million; big: 0.40e6 / (3600 x 150) = 0.7407.
  CHECK(plan->ranked[0].config == "aws/small");
  CHECK(plan->ranked[0].sustained_rps == doctest::Approx(70));
  CHECK(plan->ranked[0].cost_per_million == doctest::Approx(0.10e6 / (3600.0 * 70)));
  CHECK(plan->ranked[1].cost_per_million == doctest::Approx(0.40e6 / (3600.0 * 150)));
  CHECK(plan->ranked[0].reason.find("p99 90.0 ms <= 100.0 ms") != std::string::npos);
  REQUIRE(plan->infeasible.size() == 1);
  CHECK(plan->infeasible[0].config == "aws/slow");
  CHECK(*plan->infeasible[0].best_p99_ms == doctest::Approx(400));

  // 500 req/s: small needs ceil(500 / 70) = 8 replicas (0.80 $/h), big ceil(500 / 150) = 4 (1.60 $/h).
  plan = plan_serving(runs, {.p99_ms = 100, .rate = 500.0});
  REQUIRE(plan.ok());
  CHECK(plan->ranked[0].config == "aws/small");
  CHECK(plan->ranked[0].replicas == 8);
  CHECK(plan->ranked[1].replicas == 4);
  CHECK(plan->ranked[0].cost_per_million == doctest::Approx(8 * 0.10e6 / (3600.0 * 500)));
  // A tighter bound: small meets 35 ms only at 40 req/s (0.694 per million), still under big's 0.741; at 15 ms
  // neither does.
  plan = plan_serving(runs, {.p99_ms = 35});
  REQUIRE(plan.ok());
  REQUIRE(plan->ranked.size() == 2);
  CHECK(plan->ranked[0].config == "aws/small");
  CHECK(plan->ranked[0].sustained_rps == doctest::Approx(40));
  CHECK(plan->ranked[0].cost_per_million == doctest::Approx(0.10e6 / (3600.0 * 40)));
  plan = plan_serving(runs, {.p99_ms = 15});
  REQUIRE(plan.ok());
  CHECK(plan->ranked.empty());
  REQUIRE(plan->infeasible.size() == 3);
  CHECK(plan->infeasible[0].config == "aws/small");  // the lowest p99 first
  CHECK(*plan->infeasible[0].best_p99_ms == doctest::Approx(20));
}

TEST_CASE("serving: repetitions aggregate per level (mean, stderr); the billing rule and its monthly cap set the hour") {
  std::vector<ServingRun> runs = {served("h/cx", 0.01, {{1, 90, 10.0}, {2, 150, 40.0}}),
                                  served("h/cx", 0.01, {{1, 110, 12.0}, {2, 170, 60.0}})};
  auto plan = plan_serving(runs, {.p99_ms = 45});
  REQUIRE(plan.ok());
  REQUIRE(plan->ranked.size() == 1);
  const auto& c = plan->ranked[0];
  CHECK(c.runs == 2);
  REQUIRE(c.curve.size() == 2);
  CHECK(c.curve[0].throughput_rps == doctest::Approx(100));
  CHECK(c.curve[0].throughput_stderr == doctest::Approx(10));  // sd 14.14 over sqrt(2)
  CHECK(*c.curve[1].p99_ms == doctest::Approx(50));             // mean of 40 and 60: over the bound
  CHECK(c.sustained_rps == doctest::Approx(100));
  // A capped rule bills less than the hourly price over a month: per_hour vs a cap of 100 h a month.
  BillingRule capped = rule("per_hour");
  capped.cap_hours = 100;
  runs[0].rule = runs[1].rule = capped;
  plan = plan_serving(runs, {.p99_ms = 45});
  REQUIRE(plan.ok());
  CHECK(plan->ranked[0].billed_hourly == doctest::Approx(0.01 * 100 / 730));
  // Over a single hour the cap does not bind.
  plan = plan_serving(runs, {.p99_ms = 45, .period_s = 3600});
  REQUIRE(plan.ok());
  CHECK(plan->ranked[0].billed_hourly == doctest::Approx(0.01));
  CHECK_FALSE(plan_serving(runs, {.p99_ms = 0}).ok());
  CHECK_FALSE(plan_serving({}, {.p99_ms = 10}).ok());
}

TEST_CASE("serving: a load client's levels read from a run's metrics, rate levels included") {
  const auto levels = serving_levels(nlohmann::json::parse(R"([
      {"mode": "rate", "rate": 20, "concurrency": 0, "throughput_rps": 19.5, "images_per_s": 39, "p99_ms": 12.5},
      {"mode": "rate", "rate": 40, "throughput_rps": 38, "p99_ms": null},
      {"mode": "rate", "rate": 80}])"));
  REQUIRE(levels.size() == 2);
  CHECK(levels[0].level == 20);
  CHECK(levels[0].images_per_s == 39);
  CHECK(*levels[0].p99_ms == 12.5);
  CHECK_FALSE(levels[1].p99_ms.has_value());
}

TEST_CASE("serving: a configuration is a machine with the server's settings, and the reason names both") {
  ServingRun one = served("local/local-2c max_batch=1", 0.10, {{1, 40, 20.0}});
  one.machine = "local/local-2c";
  one.settings = {{"max_batch", 1}, {"max_delay_ms", 0.0}, {"threads", 2}, {"instances", 1}};
  ServingRun four = served("local/local-2c max_batch=4", 0.10, {{1, 40, 20.0}, {4, 120, 60.0}});
  four.machine = "local/local-2c";
  four.settings = {{"max_batch", 4}, {"max_delay_ms", 2.5}, {"threads", nullptr}, {"instances", 2}};
  auto plan = plan_serving({one, four}, {.p99_ms = 100});
  REQUIRE(plan.ok());
  REQUIRE(plan->ranked.size() == 2);  // the same machine twice, apart
  CHECK(plan->ranked[0].config == "local/local-2c max_batch=4");
  CHECK(plan->ranked[0].machine == "local/local-2c");
  CHECK(plan->ranked[0].reason.rfind("local/local-2c with max_batch=4 max_delay_ms=2.50 threads=all instances=2 at "
                                     "concurrency 4 sustains 120.0 requests/s",
                                     0) == 0);
  CHECK(plan->ranked[1].reason.rfind("local/local-2c with max_batch=1 max_delay_ms=0 threads=2 instances=1 at ", 0) ==
        0);
  const auto j = serving_plan_to_json(*plan, {.p99_ms = 100});
  CHECK(j["ranked"][0]["settings"]["instances"] == 2);
  CHECK(j["ranked"][1]["machine"] == "local/local-2c");
}
