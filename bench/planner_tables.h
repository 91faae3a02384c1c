// Synthetic trace tables for bench_planner: configs with a known true t_sum distribution, so the true
// billing-aware optimum is known and a planner's pick can be scored by its regret.
//
// A table has one or two CPU families (providers). Each family has its own price ladder (per-core price with
// a per-size wobble and a bulk discount or premium), its own billing rule, its own overheads, and a learn
// curve that is Amdahl-like with a sweet spot:
//   learn(n) = W·(s + (1-s)/n)·(1 + b/n) + c·n,   c = W(1-s)/n*²,  n* in [8, 16]
// (b: small instances are slower per core, e.g. fewer memory channels). A run's phases are the family's
// means times (1 + N(0, cv)) noise: cv 3% for learn, 10% for the other phases.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "billing/measured_run.h"
#include "billing/planner.h"

namespace tsum::bench {

struct TrueConfig {
  billing::PlanCandidate candidate;
  billing::PhaseSeconds mean{};  // true mean phases of one full run
  double warmup_s = 0;           // fixed learn warm-up a probe pays
};

struct Table {
  uint64_t seed = 0;
  billing::Workload workload{10, 60000};
  std::vector<TrueConfig> configs;
};

Table make_table(uint64_t seed);

// One noisy run of config k; partial when fraction < 1 (a probe: learns that share of the workload after the
// warm-up, reports its steady throughput, and skips verify and save). `draw` picks the noise, so the same (k, draw) gives the same run.
billing::MeasuredRun simulate_run(const Table& t, size_t k, double fraction, uint64_t draw);

struct Truth {
  double cost = 0;    // true E[cost] of one full run under the config's billing rule
  double linear = 0;  // price × E[t_sum] / 3600: what linear pricing believes
  double t_mean = 0;
  double p_within(double deadline) const;
  std::vector<double> t_draws;
};

// Monte Carlo over the run noise (`draws` runs), with the billing rule's expectation over start offsets.
std::vector<Truth> truths(const Table& t, int draws);

}  // namespace tsum::bench
