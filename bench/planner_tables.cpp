#include "planner_tables.h"

#include <algorithm>
#include <cmath>

#include "billing/prices/billing_rule.h"

namespace tsum::bench {

using namespace tsum::billing;

namespace {

const char* kRuleNames[] = {"per_second_60s_min", "per_minute", "per_10_minutes", "per_hour",
                        "hetzner",            "selectel",   "azure",          "gce_2016"};

double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  return std::exp(u(rng));
}

double uniform(std::mt19937_64& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

void add_family(Table& t, std::mt19937_64& rng, int family, double work) {
  const std::string name = "fam" + std::to_string(family);
  const double per_core = uniform(rng, 0.02, 0.06);
  const double bulk = uniform(rng, -0.08, 0.05);  // price per core scales by n^bulk
  const double s = uniform(rng, 0.01, 0.08);
  const double sweet = uniform(rng, 8, 16);
  const double b = uniform(rng, 0.0, 0.6);
  const double c = work * (1 - s) / (sweet * sweet);
  const BillingRule rule = *parse_rule(kRuleNames[std::uniform_int_distribution<int>(0, 7)(rng)]);
  PhaseSeconds over = {uniform(rng, 15, 120), uniform(rng, 20, 240), uniform(rng, 5, 90), uniform(rng, 2, 15), 0, 0,
                       uniform(rng, 2, 20),   uniform(rng, 5, 60)};
  const double warmup = uniform(rng, 2, 8);
  std::vector<int> sizes = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
  std::shuffle(sizes.begin(), sizes.end(), rng);
  sizes.resize(std::uniform_int_distribution<int>(6, 8)(rng));
  std::sort(sizes.begin(), sizes.end());
  for (int n : sizes) {
    TrueConfig tc;
    auto& cfg = tc.candidate.cfg;
    cfg.config = name + "-" + std::to_string(n) + "c";
    cfg.provider = name;
    cfg.instance_type = cfg.config;
    cfg.cores = n;
    cfg.cpu_family = name;
    tc.candidate.hourly_price = per_core * n * std::pow(n, bulk) * uniform(rng, 0.95, 1.05);
    tc.candidate.rule = rule;
    tc.mean = over;
    tc.mean[kLearn] = work * (s + (1 - s) / n) * (1 + b / n) + c * n;
    tc.mean[kVerify] = 0.02 * tc.mean[kLearn];
    tc.warmup_s = warmup;
    t.configs.push_back(tc);
  }
}

}  // namespace

Table make_table(uint64_t seed) {
  Table t;
  t.seed = seed;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  const double work = log_uniform(rng, 1200, 40000);
  const int families = std::uniform_int_distribution<int>(1, 2)(rng);
  for (int f = 0; f < families; ++f) add_family(t, rng, f, work * (f == 0 ? 1.0 : uniform(rng, 0.7, 1.3)));
  return t;
}

MeasuredRun simulate_run(const Table& t, size_t k, double fraction, uint64_t draw) {
  const auto& tc = t.configs[k];
  std::mt19937_64 rng((t.seed + 1) * 1000003 + k * 7919 + draw * 104729);
  std::normal_distribution<double> z(0, 1);
  MeasuredRun r;
  r.cfg = tc.candidate.cfg;
  for (int ph = 0; ph < 8; ++ph) r.phases[ph] = std::max(0.0, tc.mean[ph] * (1 + (ph == kLearn ? 0.03 : 0.10) * z(rng)));
  if (fraction < 1) {
    // The probe's steady throughput, as the workload reports it after its first steps.
    r.steady_images_per_s = t.workload.epochs * t.workload.images_per_epoch / r.phases[kLearn];
    r.phases[kLearn] = tc.warmup_s + fraction * r.phases[kLearn];
    r.phases[kVerify] = r.phases[kSave] = 0;
    r.images_done = fraction * t.workload.epochs * t.workload.images_per_epoch;
  }
  return r;
}

double Truth::p_within(double deadline) const {
  double ok = 0;
  for (double x : t_draws) ok += x <= deadline;
  return ok / static_cast<double>(t_draws.size());
}

std::vector<Truth> truths(const Table& t, int draws) {
  std::vector<Truth> out;
  for (size_t k = 0; k < t.configs.size(); ++k) {
    const auto& c = t.configs[k].candidate;
    Truth tr;
    for (int d = 0; d < draws; ++d) {
      double ts = t_sum_of(simulate_run(t, k, 1.0, 1'000'000 + d).phases);
      tr.t_draws.push_back(ts);
      tr.cost += expected_cost(c.rule, c.hourly_price, ts);
      tr.t_mean += ts;
    }
    tr.cost /= draws;
    tr.t_mean /= draws;
    tr.linear = c.hourly_price * tr.t_mean / 3600.0;
    out.push_back(std::move(tr));
  }
  return out;
}

}  // namespace tsum::bench
