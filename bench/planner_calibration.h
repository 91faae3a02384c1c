// What bench_planner checks about a search's own statements, on both the synthetic tables and the Scout replay:
//  - blind picks: a recommendation whose true cost exceeds the true cost of the best config already measured
//    by more than 5% (the search paid to learn something better and did not use it);
//  - band coverage: how often a candidate's true value lies inside the p10..p90 band the search reported for it
//    (80% when calibrated), over the unmeasured candidates of every round, and for the true optimum alone;
//  - reliability: the pick's stated P(within tolerance) against how often it was within, by decile.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "billing/search/search.h"

namespace tsum::bench {

struct Calibration {
  long blind = 0, picks = 0;                 // blind picks among picks scored
  long measured_picks = 0;                   // picks that were measured configs
  long blind_measured = 0;                   // blind picks that were measured configs
  long inside = 0, bands = 0;                // unmeasured candidates' bands holding their true value
  long optimum_inside = 0, optimum_bands = 0;
  long unmeasured_family_inside = 0, unmeasured_family_bands = 0;  // of configs whose family nothing measured yet
  std::array<long, 10> stated{}, within{};   // per decile of P(within): picks, and of them within tolerance
  std::array<double, 10> stated_sum{};

  // One round: `truth(config)` is the config's true value (INFINITY for one that cannot run), `best` the
  // optimum's, `measured_best` the true value of the best config measured so far (INFINITY if none).
  void add_round(const billing::SearchRound& round, const std::function<double(const std::string&)>& truth,
                 const std::string& optimum, double best, double measured_best, double tolerance,
                 const std::function<bool(const std::string&)>& family_measured = {}) {
    if (round.pick.empty()) return;
    const double pick = truth(round.pick);
    ++picks;
    measured_picks += round.pick_measured;
    const bool is_blind = pick > measured_best * 1.05 + 1e-12;
    blind += is_blind;
    blind_measured += is_blind && round.pick_measured;
    for (const auto& b : round.bands) {
      if (b.probed) continue;
      const double t = truth(b.config);
      if (!std::isfinite(t)) continue;
      const bool in = t >= b.p10 * (1 - 1e-9) && t <= b.p90 * (1 + 1e-9);
      ++bands, inside += in;
      if (b.config == optimum) ++optimum_bands, optimum_inside += in;
      if (family_measured && !family_measured(b.config)) ++unmeasured_family_bands, unmeasured_family_inside += in;
    }
    const int d = std::min(9, static_cast<int>(round.p_within * 10));
    ++stated[d], stated_sum[d] += round.p_within;
    within[d] += pick <= best * (1 + tolerance) + 1e-12;
  }

  void print(const char* what) const {
    std::printf("\n%s: blind picks %ld of %ld (%.1f%%; %ld of them measured configs); measured picks %.1f%%\n", what,
                blind, picks, picks ? 100.0 * blind / picks : 0.0, blind_measured,
                picks ? 100.0 * measured_picks / picks : 0.0);
    std::printf("  p10..p90 bands holding the true value: %.1f%% of %ld unmeasured candidates' (80%% if calibrated); "
                "the optimum's own band: %.1f%% of %ld\n",
                bands ? 100.0 * inside / bands : 0.0, bands, optimum_bands ? 100.0 * optimum_inside / optimum_bands : 0.0,
                optimum_bands);
    if (unmeasured_family_bands)
      std::printf("  of configs whose family no probe had measured: %.1f%% of %ld\n",
                  100.0 * unmeasured_family_inside / unmeasured_family_bands, unmeasured_family_bands);
    std::printf("  reliability of P(pick within tolerance):  stated decile  picks  mean stated  observed  gap\n");
    for (int d = 0; d < 10; ++d) {
      if (!stated[d]) continue;
      const double s = stated_sum[d] / stated[d], o = static_cast<double>(within[d]) / stated[d];
      std::printf("  %43s %d-%d%%  %6ld  %9.1f%%  %7.1f%%  %+5.1f\n", "", 10 * d, 10 * d + 10, stated[d], 100 * s,
                  100 * o, 100 * (o - s));
    }
    long n = 0;
    double worst = 0;
    for (int d = 0; d < 10; ++d)
      if (stated[d] >= 20) {
        ++n;
        worst = std::max(worst, std::fabs(static_cast<double>(within[d]) / stated[d] - stated_sum[d] / stated[d]));
      }
    std::printf("  largest gap over deciles with >= 20 picks: %.1f points  [%s: within 10 points]\n", 100 * worst,
                worst <= 0.1 ? "met" : "NOT met");
  }
};

}  // namespace tsum::bench
