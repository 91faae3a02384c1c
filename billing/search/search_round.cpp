// The round as things stand (billing/search/search_parts.h): the predicted and the measured best, the pick, and how
// sure the draws are of it.
#include "billing/search/search_parts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace tsum::billing::search_detail {

// A candidate the model predicts (not only the prior), whose probe did not fail: one that can be picked.
bool usable(const Scored& s, std::span<const PlanCandidate> candidates, const std::set<std::string>& excluded) {
  return s.pred && !s.prior && !excluded.contains(candidates[s.index].cfg.config);
}

// Quantile q of a candidate's draws.
double quantile_of(const Scored& s, double q) {
  std::vector<double> v = s.value;
  return quantile_sorted(v, q);
}

// P(no other usable candidate is more than the tolerance cheaper than `pick`), over joint draws.
double p_within_of(const Scored& pick, const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                   const std::set<std::string>& excluded, double tolerance) {
  const double threshold = pick.mean_value / (1 + tolerance);
  const size_t draws = pick.value.size();
  size_t within = 0;
  for (size_t i = 0; i < draws; ++i) {
    bool beaten = false;
    for (const auto& s : scored)
      if (&s != &pick && usable(s, candidates, excluded) && i < s.value.size() && s.valid[i] && s.value[i] < threshold) {
        beaten = true;
        break;
      }
    within += !beaten;
  }
  return draws ? static_cast<double>(within) / static_cast<double>(draws) : 0.0;
}

// Lower is better: feasible before infeasible, then the expected value.
bool better_scored(const Scored& a, const Scored& b) {
  return (a.feasible && !b.feasible) || (a.feasible == b.feasible && a.mean_value < b.mean_value);
}

// The round as things stand. The predicted best is the usable candidate of least expected value (feasible
// ones first); the measured best the same among probed ones. The pick is the measured best, unless nothing was
// measured (or what was misses the deadline or budget), or the caller asked for a confidence below 1 and the draws
// are that sure of the predicted best: cheaper than the measured best in at least `confidence` of them, and within
// the tolerance of the optimum in as many. The default (confidence 1) recommends only what was measured: with 0.9,
// searches limited to 1-2 probes recommended a config never run that was over 5% dearer than the best measured one
// in 20 of 736 replays of the IBM and TrimTuner traces (the predicted best is the minimum of many guesses, so its
// own draws are too hopeful; bench/planner.sh --totals).
SearchRound current_round(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                          const std::set<std::string>& excluded, const SearchRequest& req, int probes) {
  SearchRound round;
  round.probes = probes;
  const Scored *predicted = nullptr, *measured = nullptr;
  for (const auto& s : scored) {
    if (!usable(s, candidates, excluded)) continue;
    if (!predicted || better_scored(s, *predicted)) predicted = &s;
    if (s.probed && (!measured || better_scored(s, *measured))) measured = &s;
  }
  if (!predicted) return round;
  // A measured config that misses the deadline or budget is no reason to set aside a prediction that meets it.
  if (measured && !measured->feasible && predicted->feasible) measured = nullptr;
  for (const auto& s : scored) {
    if (!usable(s, candidates, excluded)) continue;
    round.bands.push_back({candidates[s.index].cfg.config, quantile_of(s, 0.1), s.mean_value, quantile_of(s, 0.9),
                           s.probed, s.pred->basis});
  }
  std::sort(round.bands.begin(), round.bands.end(),
            [](const CandidateBand& a, const CandidateBand& b) { return a.mean < b.mean; });
  round.predicted = candidates[predicted->index].cfg.config;
  const Scored* pick = predicted;
  round.p_within = p_within_of(*pick, scored, candidates, excluded, req.tolerance);
  if (measured && measured != predicted) {
    size_t wins = 0;
    for (size_t i = 0; i < predicted->value.size() && i < measured->value.size(); ++i)
      wins += predicted->valid[i] && (predicted->value[i] < measured->value[i] || !measured->valid[i]);
    round.p_beats_measured = static_cast<double>(wins) / static_cast<double>(std::max<size_t>(1, predicted->value.size()));
    if (!(req.confidence < 1) || round.p_beats_measured < req.confidence || round.p_within < req.confidence) {
      pick = measured;
      round.p_within = p_within_of(*pick, scored, candidates, excluded, req.tolerance);
    }
  }
  round.pick = candidates[pick->index].cfg.config;
  round.pick_value = pick->mean_value;
  round.pick_measured = pick->probed;
  if (measured) {
    round.best_measured = candidates[measured->index].cfg.config;
    round.best_measured_value = measured->mean_value;
    round.best_measured_p_within =
        measured == pick ? round.p_within : p_within_of(*measured, scored, candidates, excluded, req.tolerance);
  }
  return round;
}


const Scored* scored_of(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                        const std::string& config) {
  for (const auto& s : scored)
    if (candidates[s.index].cfg.config == config) return &s;
  return nullptr;
}

}  // namespace tsum::billing::search_detail
