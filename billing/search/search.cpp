#include "billing/search/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "billing/search/search_parts.h"

// The search's loop: each round learns from what was measured, scores every candidate (probe_value.cpp), takes
// stock (search_round.cpp), checks its model (search_doubt.cpp), then decides to probe or to stop.
namespace tsum::billing {

using namespace search_detail;

namespace {

// The resource model's prior on a job's working set spans the memory of the configs being searched.
PredictorOptions with_memory_range(PredictorOptions opt, std::span<const PlanCandidate> candidates) {
  double lo = kInfinity, hi = 0;
  for (const auto& c : candidates)
    if (const double m = c.cfg.cluster_memory_gib(); m > 0) lo = std::min(lo, m), hi = std::max(hi, m);
  if (opt.memory_lo_gib <= 0 && hi > 0) opt.memory_lo_gib = lo / 1.5, opt.memory_hi_gib = hi * 1.5;
  return opt;
}

Status check(std::span<const PlanCandidate> candidates, const SearchRequest& req) {
  if (candidates.empty()) return make_error(Code::invalid_argument, "search: no candidate configs");
  if (req.probe_budget && !(*req.probe_budget >= 0))
    return make_error(Code::invalid_argument, "search: probe budget must be >= 0");
  if (req.budget_share && !(*req.budget_share >= 0))
    return make_error(Code::invalid_argument, "search: budget share must be >= 0");
  if (!(req.future_runs > 0)) return make_error(Code::invalid_argument, "search: future_runs must be > 0");
  if (req.plan.objective == Objective::cost_under_deadline && !req.plan.deadline_s)
    return make_error(Code::invalid_argument, "search: cost_under_deadline needs a deadline");
  if (req.plan.objective == Objective::budget && !req.plan.budget)
    return make_error(Code::invalid_argument, "search: budget needs a budget");
  if (!(req.tolerance >= 0) || !(req.confidence >= 0 && req.confidence <= 1))
    return make_error(Code::invalid_argument, "search: tolerance must be >= 0 and confidence in [0, 1]");
  return {};
}

// The exploration budget in money: probe_budget and/or, on top of what the search spent before its first
// measurement (`entry`: a search cannot recommend anything before one), budget_share × future_runs × the planned
// run's cost at the best measured config (kDefaultBudgetShare when neither is given; infinite until something is
// measured).
double budget_of(const SearchRequest& req, double entry, double best_measured_cost) {
  double budget = req.probe_budget.value_or(kInfinity);
  const std::optional<double> share = req.budget_share    ? req.budget_share
                                      : req.probe_budget ? std::nullopt
                                                         : std::optional<double>(kDefaultBudgetShare);
  if (share && best_measured_cost < kInfinity)
    budget = std::min(budget, entry + *share * req.future_runs * best_measured_cost);
  return budget;
}

// The next probe, or why the search stops (and whether it then recommends only what it measured).
struct Decision {
  std::optional<Choice> probe;
  std::string stop;
  bool force_measured = true;
};

Decision probe_next(Choice c) {
  Decision d;
  d.probe = std::move(c);
  return d;
}

Decision stop_with(std::string why, bool force_measured = true) {
  Decision d;
  d.stop = std::move(why);
  d.force_measured = force_measured;
  return d;
}

// Without a trusted model (SearchResult::doubt): a probe spread away from those tried, if it is worth its cost.
Decision decide_in_doubt(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                         const std::set<std::string>& probed, const std::set<std::string>& excluded,
                         const SearchRequest& req, const std::vector<Place>& places, SearchResult& out) {
  double saving = 0;
  auto free = explore_freely(scored, candidates, places, probed, excluded, req, out.budget - out.spent, saving);
  if (free) out.expected_saving = saving, out.expected_probe_cost = free->probe_cost;
  if (free && saving > free->probe_cost) return probe_next(*free);
  if (free)
    return stop_with("no probe is worth its cost without the model (" + out.doubt + "): a config like those "
                     "measured is expected to save " + money(saving) + " over the " + money(req.future_runs) +
                     " planned runs for a probe of " + money(free->probe_cost));
  return stop_with("the exploration budget is spent: spent " + money(out.spent) + ", budget " + money(out.budget) +
                       "; no config left to explore has a p90 probe cost within it",
                   !req.probe_budget);
}

// The stop when the budget binds: what it could still buy, and why that is not bought (the affordable probe worth
// most saves less than it costs, or none fits).
Decision budget_spent(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                      const SearchRequest& req, double entry, const Choice& best_any,
                      const std::optional<Choice>& choice, const SearchResult& out) {
  const double budget_left = out.budget - out.spent;
  const Scored& b = scored[best_any.index];
  const std::string affordable =
      choice ? "; the affordable probe worth most, " + candidates[choice->index].cfg.config + ", is expected to save " +
                   money(choice->gain) + " for a probe of " + money(choice->probe_cost) + ": not worth it"
             : "; no other probe's p90 cost fits the " + money(budget_left) + " left";
  return stop_with("the exploration budget is spent: spent " + money(out.spent) + ", budget " + money(out.budget) +
                       (req.probe_budget ? "" : " (the first measurement's " + money(entry) + " + " +
                                                    percent(req.budget_share.value_or(kDefaultBudgetShare)) +
                                                    " of the planned runs at the first measured config)") +
                       "; the probe worth most, " + candidates[b.index].cfg.config + " (expected saving " +
                       money(best_any.gain) + "), may cost " + money(b.probe_cost_p90) + " (p90)" + affordable,
                   !req.probe_budget);
}

Decision decide(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates, const SearchRound& round,
                const std::set<std::string>& probed, const std::set<std::string>& excluded, const SearchRequest& req,
                double entry, const std::vector<Place>& places, SearchResult& out) {
  const double budget_left = out.budget - out.spent;
  if (req.max_probes > 0 && static_cast<int>(out.trace.size()) >= req.max_probes)
    return stop_with("max probes reached", false);
  const Scored* predicted = scored_of(scored, candidates, round.predicted);
  const bool last_probe = req.max_probes > 0 && static_cast<int>(out.trace.size()) + 1 == req.max_probes;
  if (last_probe && predicted && !predicted->probed && predicted->feasible && predicted->probe_cost_p90 <= budget_left)
    return probe_next(Choice{predicted->index, "the last probe measures the predicted pick", 0, predicted->probe_cost, false});
  if (std::none_of(scored.begin(), scored.end(), [](const Scored& s) { return s.pred.has_value(); })) {
    // Nothing measured yet. Once a probe has failed there, the cheap group's guess was wrong (a job that does
    // not finish on the cheapest machines often needs bigger ones): the next probe goes where the failed ones
    // were not, the config least like any tried for its probe cost.
    if (!out.trace.empty()) {
      double unused = 0;
      if (auto away = explore_freely(scored, candidates, places, probed, excluded, req, budget_left, unused)) {
        away->why = "explore away from the " + std::to_string(out.trace.size()) +
                    (out.trace.size() == 1 ? " probe" : " probes") +
                    " that failed: the config least like any tried (family, cores, nodes, memory) for its probe cost";
        return probe_next(*away);
      }
    }
    auto first = pick_exploration(scored, candidates, excluded, req.plan.objective);
    if (first && first->probe_cost > budget_left)
      return stop_with("the probe budget " + money(out.budget) + " does not cover a first probe (" +
                           money(first->probe_cost) + ")",
                       false);
    if (first) return probe_next(*first);
  }
  std::optional<Choice> best_any;
  auto choice = pick_by_value(scored, candidates, probed, excluded, req, budget_left,
                              out.improvement_check.discount(), best_any);
  if (!best_any) return stop_with("every config has been probed");
  out.expected_saving = best_any->gain, out.expected_probe_cost = best_any->probe_cost;
  if (!out.doubt.empty()) return decide_in_doubt(scored, candidates, probed, excluded, req, places, out);
  if (last_probe && choice) return probe_next(*choice);
  if (best_any->gain <= best_any->probe_cost && req.max_probes > 0) {
    // The caller allowed more probes: where the model sees nothing worth probing, they go where it has seen nothing.
    double saving = 0;
    if (auto free = explore_freely(scored, candidates, places, probed, excluded, req, budget_left, saving)) {
      free->why = "max_probes leaves " + std::to_string(req.max_probes - static_cast<int>(out.trace.size())) +
                  " probes and the model expects no saving worth one (" + money(best_any->gain) + " at best): " +
                  free->why.substr(free->why.find(':') + 2);
      return probe_next(*free);
    }
  }
  // Where it would stop, a working set above every probed config is looked past first.
  const bool worth_one = best_any->gain > best_any->probe_cost && choice && choice->gain > choice->probe_cost;
  std::string unaffordable;  // why no probe past the memory probed, where one would have been taken
  if (!worth_one)
    if (auto past = probe_past_memory(scored, candidates, out.trace, probed, excluded, req, budget_left, unaffordable))
      return probe_next(*past);
  if (best_any->gain <= best_any->probe_cost)
    return stop_with("no probe is worth its cost: the best, " + candidates[best_any->index].cfg.config +
                     ", is expected to save " + money(best_any->gain) + " over the " + money(req.future_runs) +
                     " planned runs for a probe of " + money(best_any->probe_cost) +
                     (unaffordable.empty() ? "" : "; " + unaffordable));
  if (worth_one) return probe_next(*choice);
  Decision d = budget_spent(scored, candidates, req, entry, *best_any, choice, out);
  if (!unaffordable.empty()) d.stop += "; " + unaffordable;
  return d;
}

// Runs the chosen probe with the seconds the budget leaves it, or fewer where past them it could no longer beat the
// best measured config (stop_s), and records what it cost; a run that measured the config joins the history, one
// that failed `unfinished` (what it learned bounds the config's learn time). false: it failed.
bool run_probe(const PlanCandidate& cand, double budget_left, double stop_s, const ProbeFn& probe,
               const SearchRequest& req, ProbeStep& step, SearchResult& out, std::vector<MeasuredRun>& history,
               std::vector<MeasuredRun>& unfinished) {
  ProbeSpec spec = req.probe;
  const double budget_s = budget_left < kInfinity ? seconds_within(cand, budget_left) : kInfinity;
  if (const double limit = std::min(budget_s, stop_s); limit < kInfinity) {
    spec.max_s = step.limit_s = limit;
    step.limit = stop_s < budget_s ? kLimitPastBest : kLimitBudget;
  }
  auto run = probe(cand, spec);
  // A caller that stops a probe at its limit reports it failed. One that finished past its limit (its machine's
  // poweroff took longer than the caller set aside, or the caller did not stop it) measured its config all the
  // same: what it billed is spent, and what it measured is kept (ProbeStep: t_sum above limit_s).
  if (run) {
    step.t_sum = t_sum_of(run->phases);
    step.memory_used = run->memory_used;
    step.probe_cost = expected_cost(cand.rule, cand.hourly_price, step.t_sum);
    out.spent += step.probe_cost;
  }
  if (!run) {
    step.error = run.error().detail;
    return false;
  }
  run->cfg = cand.cfg;
  const bool measured = !run->failed;
  if (!measured) step.error = run->failure;
  (measured ? history : unfinished).push_back(std::move(*run));
  return measured;
}

// The search's answer once it stops: the plan over every config whose probe did not fail, from the runs it measured,
// the last round's pick first (its measured best when the search stopped by itself or in doubt), and why that pick.
Status answer(std::span<const PlanCandidate> candidates, const std::vector<MeasuredRun>& history,
              const std::set<std::string>& excluded, bool force_measured, const SearchRequest& req,
              const PredictorOptions& popt, SearchResult& out) {
  auto predictor = Predictor::learn(history, req.workload, popt);
  if (!predictor) return predictor.error();
  // A config whose probe failed is not recommended.
  std::vector<PlanCandidate> usable_candidates;
  for (const auto& c : candidates)
    if (!excluded.contains(c.cfg.config)) usable_candidates.push_back(c);
  if (usable_candidates.empty()) return make_error(Code::unavailable, "search: every probe failed");
  auto plan = make_plan(*predictor, usable_candidates, req.plan);
  if (!plan) return plan.error();
  for (const auto& step : out.trace)
    if (!step.error.empty()) plan->unpredictable.emplace_back(step.config, "its probe failed: " + step.error);
  out.plan = std::move(*plan);
  // The recommendation is the last round's pick (its measured best when the search stopped by itself or in
  // doubt), first in the plan.
  if (!out.rounds.empty()) {
    SearchRound& last = out.rounds.back();
    if (force_measured && !last.best_measured.empty() && last.pick != last.best_measured) {
      last.pick = last.best_measured, last.pick_value = last.best_measured_value, last.pick_measured = true;
      last.p_within = last.best_measured_p_within;
    }
    // When nothing is predicted to meet the deadline or budget, the planner's own order of the infeasible
    // (most likely to make it first) stands.
    auto& ranked = out.plan.ranked;
    auto at = std::find_if(ranked.begin(), ranked.end(),
                           [&](const PlanEntry& e) { return e.candidate.cfg.config == last.pick; });
    if (at != ranked.end() && at->feasible) std::rotate(ranked.begin(), at, at + 1);
    const std::string& rec = ranked.empty() ? last.pick : ranked.front().candidate.cfg.config;
    out.measured = std::any_of(history.begin(), history.end(), [&](const MeasuredRun& r) { return r.cfg.config == rec; });
    out.p_within = rec == last.pick ? last.p_within : 0;
    out.recommendation_basis =
        rec.empty()                 ? ""
        : out.measured              ? "measured"
        : rec != last.pick          ? "predicted: no config is predicted to meet the deadline or budget"
        : last.best_measured.empty() ? "predicted: nothing was measured"
                                     : "predicted: cheaper than the best measured config (" + last.best_measured +
                                           ") in " + money(100 * last.p_beats_measured) +
                                           "% of the draws, and within the tolerance in " +
                                           money(100 * last.p_within) + "%";
  }
  return {};
}

}  // namespace

Result<SearchResult> adaptive_search(std::span<const PlanCandidate> candidates, std::vector<MeasuredRun> history,
                                     const ProbeFn& probe, const SearchRequest& req) {
  if (auto s = check(candidates, req); !s) return s.error();
  SearchResult out;
  out.tolerance = req.tolerance;
  out.budget = kInfinity;
  std::set<std::string> excluded;
  const PredictorOptions popt = with_memory_range(req.predictor, candidates);
  std::optional<Expectation> expected;  // of the last probe, before it ran
  bool force_measured = true;           // a search that stops by itself (or in doubt) recommends what it measured
  std::optional<double> entry;          // spent when the first measurement came in
  const std::vector<Place> places = places_of(candidates);
  std::vector<MeasuredRun> unfinished;  // probes that failed: lower bounds on their configs' learn time
  while (true) {
    std::vector<MeasuredRun> known = history;
    known.insert(known.end(), unfinished.begin(), unfinished.end());
    auto predictor = Predictor::learn(known, req.workload, popt);
    if (!predictor) return predictor.error();
    std::set<std::string> probed;
    for (const auto& r : history) probed.insert(r.cfg.config);
    const std::vector<Scored> scored =
        score_candidates(*predictor, candidates, history, probed, req, popt, out.model_check.widening());
    if (expected) judge_last_probe(*expected, scored, candidates, req, out);
    expected.reset();
    out.rounds.push_back(current_round(scored, candidates, excluded, req, static_cast<int>(out.trace.size())));
    const SearchRound& round = out.rounds.back();
    double best_cost = kInfinity;
    if (const Scored* m = scored_of(scored, candidates, round.best_measured)) best_cost = m->mean_cost;
    // The budget is fixed when the first measurement comes in (budget_of only falls as the best measured config
    // does, and a budget that fell below what was spent would be no budget).
    if (best_cost < kInfinity && !entry) entry = out.spent, out.budget = budget_of(req, *entry, best_cost);
    if (!entry) out.budget = budget_of(req, 0, kInfinity);
    if (out.doubt.empty())
      if (auto why = doubt(out)) out.doubt = *why;
    Decision next = decide(scored, candidates, round, probed, excluded, req, entry.value_or(0), places, out);
    if (!next.probe) {
      out.stop_reason = next.stop;
      force_measured = next.force_measured;
      break;
    }
    const Choice& choice = *next.probe;
    const auto& cand = candidates[choice.index];
    ProbeStep step;
    step.config = cand.cfg.config;
    step.why = choice.why;
    step.expected_gain = choice.gain;
    step.expected_probe_cost = choice.probe_cost;
    step.expected_probe_cost_p90 = scored[choice.index].probe_cost_p90;
    if (req.on_probe) req.on_probe(out, step);
    expected = expectation_of(scored[choice.index], candidates, scored, req.future_runs);
    const bool measured =
        run_probe(cand, out.budget - out.spent, scored[choice.index].stop_s, probe, req, step, out, history, unfinished);
    if (!measured) excluded.insert(cand.cfg.config), expected.reset();
    out.trace.push_back(std::move(step));
  }
  if (history.empty() && !out.trace.empty())
    return make_error(Code::unavailable, "search: nothing was measured: " + std::to_string(out.trace.size()) +
                                             " probes, every one failed (" + out.stop_reason + ")");
  if (auto s = answer(candidates, history, excluded, force_measured, req, popt, out); !s) return s.error();
  out.history = std::move(history);
  return out;
}

}  // namespace tsum::billing
