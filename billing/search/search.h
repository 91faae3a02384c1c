// The room billing/search/ owns the adaptive probe search: what each probe is worth, the round's pick, the model's
// checks, the loop that probes or stops, and the answer as JSON (search_parts.h maps its files). It calls
// billing/model/ and the planner.
//
// Adaptive probing: which config to measure next, and when to stop measuring. A pure library: the caller
// supplies a probe callback that runs (part of) the workload on a config and returns its measured phases.
//
// The objective is what the user pays in all: the search's own probes plus the planned runs (future_runs x
// repetitions) on its pick. Each round refits the predictor on everything measured so far, then:
//  1. the first probe, when nothing is measured: a config of the group (CPU family or GPU type, see
//     Predictor::group_of) that is cheapest to probe: the second smallest for cost, the lower third for cost under
//     a deadline, the middle for time and budget (see explore_index);
//  2. every unprobed config j then has a value of information: the expected reduction of the planned runs' cost
//     if it were probed, future_runs x E[max(0, incumbent - value_j)] over its predictive distribution (the
//     incumbent is the best *measured* config; time objectives convert hours with value_per_hour), less its
//     expected probe cost. A config whose group nothing measured yet is predicted by the prior of
//     prior_prediction: the measured configs' work (learn seconds x cores x nodes) spread over its own cores and
//     nodes, with the measured configs' spread and at least a factor of 2 either way. The config of the largest
//     net value is probed; the search stops when no probe is worth its cost, and says so with both numbers.
//  3. exploration budget: a probe starts only if the spend so far plus its p90 cost fits the budget: probe_budget
//     (money) and/or, on top of what the probes cost until the first measurement came in, budget_share x
//     future_runs x the planned run's cost at that first measured config (default 10% when neither is given). The
//     budget is fixed when the first measurement comes in and never changes after, so it never falls below what
//     was spent. The probe is also told the most seconds it may run (ProbeSpec::max_s), so that even a probe slower
//     than its p90 cannot spend past the budget: it is stopped there and counts as failed.
//  4. honest bands: each probe's learn time is compared with the log-normal predicted for it; every prediction of
//     an unmeasured config is widened by ModelCheck::widening() (1 while the probes land where the model said).
//  5. doubt changes strategy, it does not stop the search: when its probes land outside the bands predicted for
//     them more often than a calibrated model would with probability 1% (ModelCheck), or improve on the incumbent
//     much less often than predicted (ImprovementCheck), the search explores without the model: each probe is the
//     config least like any tried (family, cores, nodes, memory) for its probe cost, while the budget allows and a
//     config like those measured (their values, log-normal, at least a factor of 2 wide) is worth its probe.
//  6. the probes max_probes allows are spent: where the model sees no probe worth its cost before then, the rest
//     spread the same way.
//  Also stop when max_probes is reached or nothing is left to probe. What a probe's machine saw of memory
//  (MeasuredRun::memory_used) reaches the resource model, which moves the job's working set above a config whose
//  run filled its memory and below one whose run used half or less.
// What it knows and what it guesses are kept apart:
//  - the pick (each round's, and the recommendation) is the best *measured* config. Only a caller who asks for a
//    confidence below 1 may get an unmeasured one, when it is cheaper than the best measured in at least
//    `confidence` of the joint draws and within `tolerance` of the optimum with the same confidence; the result
//    says which (`measured`, `recommendation_basis`, with the band). A search that stops by itself (not at
//    max_probes or an explicit probe_budget) recommends a measured config, so the total never exceeds running
//    every planned run on the first probe by more than the budget;
//  - the last probe max_probes allows measures the predicted best.
// A config whose probe failed is not probed again and never recommended; what it ran is spent all the same.
// cost_under_deadline counts a draw's improvement only when it meets the deadline; budget only when the
// draw's cost is within budget. The plan ranks all candidates (probed ones from their measurements, the
// others from the fitted curves), with the recommendation first.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "billing/measured_run.h"
#include "billing/planner.h"
#include "billing/model/predictor.h"
#include "common/result.h"

namespace tsum::billing {

// The part of the workload a probe runs: images or epochs (a few hundred steps); both 0 = a full run.
// max_s: the most seconds of t_sum the probe may bill (the exploration budget left); 0 = no limit. A probe that
// reaches it is stopped, and the caller reports it as a failed run (MeasuredRun::failed) with what it billed.
struct ProbeSpec {
  double images = 0;
  double epochs = 0;
  double max_s = 0;
};

// The default exploration budget: this share of the planned runs' cost at the best measured config.
inline constexpr double kDefaultBudgetShare = 0.1;

// Runs a probe; returns its measured phases with images_done/epochs_done set for a partial run.
using ProbeFn = std::function<Result<MeasuredRun>(const PlanCandidate&, const ProbeSpec&)>;

struct SearchRequest {
  PlanRequest plan;  // objective, deadline, budget, repetitions
  Workload workload;
  PredictorOptions predictor;
  ProbeSpec probe;
  // The exploration budget: money for probes (in the candidates' currency) and/or a share of the planned runs'
  // cost at the best measured config; the smaller applies. Neither set: budget_share = kDefaultBudgetShare.
  std::optional<double> probe_budget;
  std::optional<double> budget_share;
  int max_probes = 0;               // 0 = no limit besides the budget
  double future_runs = 1;           // how many times the recommended plan will run
  double value_per_hour = 0;        // time and budget objectives: money per hour of wall time saved
  double unexplored_probe_s = 120;  // assumed learn seconds of the first probe, before anything is measured
  double tolerance = 0.05;          // how far above the optimum a pick may be
  // Below 1: an unmeasured config may be recommended when it beats the best measured one, and is within the
  // tolerance, in at least this share of the joint draws. 1 (the default): only what was measured.
  double confidence = 1;
  // Called on the search's thread as each probe starts: the trace and rounds so far, and the probe's step
  // (config and why; no measurement yet).
  std::function<void(const struct SearchResult&, const struct ProbeStep&)> on_probe;
};

// Why a probe had a limit (ProbeStep::limit).
inline constexpr const char* kLimitPastBest = "past it, it would cost more than the best measured config";
inline constexpr const char* kLimitBudget = "what the exploration budget left it";

struct ProbeStep {
  std::string config;
  std::string why;                   // "explore: ..." or "expected saving ..."
  double expected_gain = 0;          // money; 0 for exploration
  double expected_probe_cost = 0;
  double expected_probe_cost_p90 = 0;  // what the budget check took it to cost at most
  double probe_cost = 0;             // measured t_sum under the config's billing rule
  double t_sum = 0;                  // the probe's measured t_sum
  std::optional<double> memory_used;  // what its machine saw of memory in learn (MeasuredRun::memory_used)
  double limit_s = 0;                // the t_sum it was stopped at, if it ran that long (0: none)
  std::string limit;                 // why that limit: the budget, or past it the config could not beat the best
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
// The same probes in learn time: z² of each measured learn time against the log-normal the model predicted for it.
// Their mean is 1 when the model is calibrated; widening() is the factor by which the search widens every
// prediction of a config it has not measured, sqrt((2 + Σz²) / (2 + n)) (two calibrated probes' worth of prior),
// never below 1 and at most kMaxWidening.
struct ModelCheck {
  int probes = 0;        // probes of configs that had a prediction
  int outside = 0;       // whose measured value fell outside its p10..p90 band
  bool explains = true;  // false: the probes missed their bands too often; the search widened its bands
  std::vector<double> z_squared;

  static bool fails(int probes, int outside);
  double widening() const;
};
inline constexpr double kMaxWidening = 4;

// How often the probes improved on the incumbent against how often the predictions said they would: each probe
// of a predicted config had P(value < incumbent). The model is too hopeful when so few improved that the
// predicted probabilities would give that few or fewer with probability below 1% (Poisson binomial).
// The same probes by money: what the model promised they would save over the planned runs (future_runs × their
// expected improvement) against what they delivered (future_runs × how far each came under the incumbent). The
// search weighs the next probe's expected saving by discount(): (n·delivered/promised + 1) / (n + 1) after n
// probes, the first at face value and then as the probes bore the model out.
struct ImprovementCheck {
  std::vector<double> predicted;  // P(improve) of each probe compared
  int improved = 0;
  double promised = 0;
  double delivered = 0;
  bool explains = true;

  static bool fails(std::span<const double> predicted, int improved);
  double discount() const;
  double expected_improved() const;  // the sum of the predicted P(improve)
};

// P(X <= k) for X the number of successes of independent trials with probabilities p.
double poisson_binomial_cdf(std::span<const double> p, int k);

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
  ImprovementCheck improvement_check;
  double spent = 0;
  double budget = 0;            // the exploration budget when it stopped (infinity: none yet)
  double expected_saving = 0;   // of the best probe left when it stopped: future_runs x its expected improvement
  double expected_probe_cost = 0;  // and that probe's expected cost
  std::string stop_reason;
  std::string doubt;  // why the search went on without its model ("" while it trusted it)
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
