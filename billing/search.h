// Adaptive probing: which config to measure next, and when to stop measuring. A pure library: the caller
// supplies a probe callback that runs (part of) the workload on a config and returns its measured phases.
//
// Each round refits the predictor on everything measured so far, then:
//  1. explore: a group (CPU family or GPU type, see Predictor::group_of) with no run at all cannot be
//     predicted, so one of its configs is probed first, cheapest group first: the second smallest for cost,
//     the lower third for cost under a deadline, the middle for time and budget (see explore_index);
//  2. exploit: otherwise every unprobed config j gets an expected improvement over the incumbent (the best
//     probed config by expected value) from its predicted distribution,
//       gain_j = E[max(0, incumbent - value_j)] * future_runs * repetitions
//     in money (time objectives convert hours saved with value_per_hour), and the config with the largest
//     net gain (gain_j - its expected probe cost) is probed next (gain per probe cost, tried before, favours
//     cheap probes of little promise: 86.7% vs 91.7% of synthetic tables within 5% after 3 probes on
//     bench/planner --tables 60, and worse on the Scout replay);
//  3. stop when that best gain is below its probe's cost *and* the predictions leave the pick within
//     `tolerance` of the optimum with probability >= `confidence` (P(no other candidate costs less than the
//     pick's expected cost / (1 + tolerance)), over joint draws); while that probability is short, the
//     candidate most likely to be that much cheaper is probed instead, so a probe that lands just under a
//     billing step cannot stop the search while a neighbour may fall under a cheaper one. Also stop when the
//     probe budget would be exceeded, max_probes is reached, or nothing is left to probe.
// What it knows and what it guesses are kept apart:
//  - the pick (each round's, and the recommendation) is the best *measured* config, unless the predicted best
//    is cheaper than it in at least `confidence` of the joint draws and within `tolerance` of the optimum with
//    the same confidence; the result says which (`measured`, `recommendation_basis`, with the band);
//  - an unmeasured pick is measured before the search stops on it, and the last probe max_probes allows
//    measures the predicted best;
//  - spend is bounded by what the search could still save: before each probe, spent + its expected cost must
//    not exceed future_runs x (best measured value - the lowest p10 of any candidate; 0 for a group nothing
//    predicts yet), else it stops on what it measured;
//  - every probe of a predicted config is compared with the p10..p90 band predicted for it just before; when
//    the probes miss more often than a calibrated model would with probability 1% (ModelCheck), the model
//    does not explain this workload: the search says so and stops on the best measured config.
// A config whose probe failed is not probed again and never recommended.
// cost_under_deadline counts a draw's improvement only when it meets the deadline; budget only when the
// draw's cost is within budget. The plan ranks all candidates (probed ones from their measurements, the
// others from the fitted curves), with the recommendation first.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/measured_run.h"
#include "billing/planner.h"
#include "billing/predictor.h"
#include "common/result.h"

namespace tsum::billing {

// The part of the workload a probe runs: images or epochs (a few hundred steps); both 0 = a full run.
struct ProbeSpec {
  double images = 0;
  double epochs = 0;
};

// Runs a probe; returns its measured phases with images_done/epochs_done set for a partial run.
using ProbeFn = std::function<Result<MeasuredRun>(const PlanCandidate&, const ProbeSpec&)>;

struct SearchRequest {
  PlanRequest plan;  // objective, deadline, budget, repetitions
  Workload workload;
  PredictorOptions predictor;
  ProbeSpec probe;
  double probe_budget = 0;          // money for probes, in the candidates' currency
  int max_probes = 0;               // 0 = no limit besides the budget
  double future_runs = 1;           // how many times the recommended plan will run
  double value_per_hour = 0;        // time and budget objectives: money per hour of wall time saved
  double unexplored_probe_s = 120;  // assumed learn seconds of a probe in a group nothing predicts yet
  double tolerance = 0.05;          // how far above the optimum a pick may be
  double confidence = 0.9;          // required P(pick within tolerance) before the search stops by itself
  // Called on the search's thread as each probe starts: the trace and rounds so far, and the probe's step
  // (config and why; no measurement yet).
  std::function<void(const struct SearchResult&, const struct ProbeStep&)> on_probe;
};

struct ProbeStep {
  std::string config;
  std::string why;                   // "explore: ..." or "expected gain ..."
  double expected_gain = 0;          // money; 0 for exploration
  double expected_probe_cost = 0;
  double probe_cost = 0;             // measured t_sum under the config's billing rule
  double t_sum = 0;                  // the probe's measured t_sum
  std::string error;                 // set when the probe failed; the config is then not probed again
};

// What the search believed after a number of probes: its pick and every candidate's predicted cost band.
struct CandidateBand {
  std::string config;
  double p10 = 0, mean = 0, p90 = 0;  // of the objective's value (money) per plan run
  bool probed = false;
  std::string basis;
};

struct SearchRound {
  int probes = 0;         // successful and failed probes so far
  std::string pick;       // the config the search would recommend now ("" when nothing can be predicted)
  double pick_value = 0;  // its expected value
  double p_within = 0;    // P(pick within tolerance of the optimum)
  bool pick_measured = false;
  std::string predicted;              // the candidate of least expected value, measured or not
  double p_beats_measured = 0;        // P(predicted cheaper than best_measured), when they differ
  std::string best_measured;          // the measured candidate of least expected value ("" if none)
  double best_measured_value = 0;
  double best_measured_p_within = 0;
  std::vector<CandidateBand> bands;  // every predicted candidate, cheapest expected first
};

// How the probes compared with the bands predicted for them just before they ran. A calibrated p10..p90 band
// misses 20% of measurements; the model fails when its probes missed so often that a calibrated one would
// have done so with probability below 1% (at least 3 probes compared: all 3 missed, 4 of 5, 5 of 7, ...).
struct ModelCheck {
  int probes = 0;        // probes of configs that had a prediction
  int outside = 0;       // whose measured value fell outside its p10..p90 band
  bool explains = true;  // false: the search stopped on the best measured config

  static bool fails(int probes, int outside);
};

// P(X >= k) for X ~ Binomial(n, p).
double binomial_tail(int n, int k, double p);

struct SearchResult {
  Plan plan;  // the final ranking over all candidates; its first entry is the recommendation
  std::vector<ProbeStep> trace;
  std::vector<SearchRound> rounds;  // rounds[k]: after k probes (rounds[0]: from the history alone)
  double tolerance = 0.05;
  double p_within = 0;              // of the final pick
  bool measured = false;            // the recommendation was probed
  std::string recommendation_basis; // "measured", or why a prediction was trusted over what was measured
  ModelCheck model_check;
  double spent = 0;
  std::string stop_reason;
  std::vector<MeasuredRun> history;  // the input history plus every successful probe

  const PlanEntry& recommendation() const { return plan.ranked.front(); }
};

// invalid_argument for no candidates, a negative budget or future_runs <= 0. Errors of the planner on the
// final ranking (e.g. nothing could be probed) come back as they are.
Result<SearchResult> adaptive_search(std::span<const PlanCandidate> candidates, std::vector<MeasuredRun> history,
                                     const ProbeFn& probe, const SearchRequest& req);

// The whole result: recommendation, trace, rounds, tolerance, p_within, spent, stop_reason, plan.
nlohmann::json search_to_json(const SearchResult& result);
// A search still running: its trace, rounds, tolerance and spend so far, and the probe under way
// ("next": {config, why}).
nlohmann::json search_progress_json(const SearchResult& so_far, const ProbeStep& next);

}  // namespace tsum::billing
