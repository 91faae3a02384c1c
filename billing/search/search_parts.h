// The parts of the probe search (billing/search/search.h) share these, and nothing outside billing/search/ includes
// them. What one candidate is worth this round (Scored: its value draws and probe cost), the choices a round makes,
// and the functions each part lends the others:
//   probe_value.cpp   what a probe is worth: value draws, probe cost, expected improvement, the prior of an unmeasured
//                     family, the probe the budget buys
//   search_round.cpp  the round as things stand: predicted and measured best, the pick, P(within tolerance)
//   search_doubt.cpp  the model's checks (its bands, its promised improvements) and exploring without it
//   search.cpp        the loop: decide, probe, stop; search_json.cpp: the answer as JSON
#pragma once

#include <array>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "billing/search/search.h"

namespace tsum::billing::search_detail {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// One candidate this round: its prediction, what one planned run on it is worth per draw, and what probing it costs.
struct Scored {
  size_t index = 0;               // into candidates
  std::optional<Prediction> pred;
  std::vector<double> value;      // money per draw (lower is better)
  std::vector<bool> valid;        // the draw meets the deadline / budget
  double mean_value = 0;
  double mean_cost = 0;           // money per plan run (times repetitions), whatever the objective
  bool feasible = true;
  double probe_cost = 0;          // expected
  double probe_cost_p90 = 0;
  double stop_s = kInfinity;      // its probe stops here (stop_loss_s)
  bool probed = false;            // measured: its prediction comes from its own runs
  bool prior = false;             // its group has no run: predicted by prior_prediction, never picked on it
};

// A probe chosen, why, and what it is expected to save and to cost.
struct Choice {
  size_t index = 0;
  std::string why;
  double gain = 0;
  double probe_cost = 0;
  bool explore = false;
};

// What the search expects of a probe before it runs, to check the model with afterwards.
struct Expectation {
  std::string config;
  std::optional<CandidateBand> band;  // the model's p10..p90 (not the prior's)
  double p_improve = 0;               // P(value < incumbent)
  double incumbent = 0;
  double promised = 0;                // future_runs × E[max(0, incumbent - value)]
  double log_learn_mean = 0, log_learn_sd = 0;  // of the model's learn draws (sd 0: no model prediction)
};

// Where a config sits among the candidates, for spreading probes without a model: its family, and the logs of
// its cores (or GPUs) per machine, its nodes and its memory, each over its range among the candidates.
struct Place {
  std::string family;
  std::array<double, 3> x{};
};

// probe_value.cpp
double quantile_sorted(std::vector<double>& v, double q);
double seconds_within(const PlanCandidate& c, double money);
double measured_incumbent(const std::vector<Scored>& scored);
double incumbent_of(const std::vector<Scored>& scored);
double expected_improvement(const Scored& s, double incumbent);
std::string money(double v);
std::string percent(double share);
std::optional<Choice> pick_exploration(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                       const std::set<std::string>& excluded, Objective objective);
std::optional<Choice> pick_by_value(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                    const std::set<std::string>& probed, const std::set<std::string>& excluded,
                                    const SearchRequest& req, double budget_left, double discount,
                                    std::optional<Choice>& best_any);
std::optional<Choice> probe_past_memory(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                        const std::vector<ProbeStep>& trace, const std::set<std::string>& probed,
                                        const std::set<std::string>& excluded, const SearchRequest& req,
                                        double budget_left, std::string& unaffordable);
std::vector<Scored> score_candidates(const Predictor& predictor, std::span<const PlanCandidate> candidates,
                                     std::span<const MeasuredRun> history, const std::set<std::string>& probed,
                                     const SearchRequest& req, const PredictorOptions& popt, double widening);

// search_round.cpp
double quantile_of(const Scored& s, double q);
SearchRound current_round(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                          const std::set<std::string>& excluded, const SearchRequest& req, int probes);
const Scored* scored_of(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                        const std::string& config);

// search_doubt.cpp
std::pair<double, double> log_moments(const std::vector<double>& draws);
std::optional<Expectation> expectation_of(const Scored& s, std::span<const PlanCandidate> candidates,
                                          const std::vector<Scored>& scored, double future_runs);
void judge_last_probe(const Expectation& e, const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                      const SearchRequest& req, SearchResult& out);
std::optional<std::string> doubt(SearchResult& out);
std::vector<Place> places_of(std::span<const PlanCandidate> candidates);
std::optional<Choice> explore_freely(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                     const std::vector<Place>& places, const std::set<std::string>& probed,
                                     const std::set<std::string>& excluded, const SearchRequest& req,
                                     double budget_left, double& saving);

}  // namespace tsum::billing::search_detail
