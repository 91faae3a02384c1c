// What a probe is worth (billing/search/search_parts.h): each candidate's value draws and probe cost, what it may
// save on the incumbent, the prior of a family nothing has measured, and the probe the budget buys.
#include "billing/search/search_parts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "billing/model/phase_priors.h"
#include "billing/model/resource_model.h"

namespace tsum::billing::search_detail {

double probe_fraction(const ProbeSpec& spec, const Workload& w) {
  if (spec.images > 0 && w.images_per_epoch > 0 && w.epochs > 0) return std::min(1.0, spec.images / (w.epochs * w.images_per_epoch));
  if (spec.epochs > 0 && w.epochs > 0) return std::min(1.0, spec.epochs / w.epochs);
  return 1.0;
}

// Quantile q of v (sorted in place), nearest rank below.
double quantile_sorted(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// Whether an objective values a run by its hours (time, budget) rather than by its cost.
bool time_valued(const PlanRequest& plan) { return plan.objective == Objective::time || plan.objective == Objective::budget; }

// The expected cost of probing c, and its p90 over the prediction's draws (the expectation when none); a probe
// stopped at stop_s seconds (stop_loss_s) costs what it ran.
std::pair<double, double> probe_cost_of(const PlanCandidate& c, const Prediction* p, const SearchRequest& req,
                                        double stop_s) {
  double t = 0;
  if (p) {
    const double f = probe_fraction(req.probe, req.workload);
    std::vector<double> costs(p->t_sum.size());
    double sum = 0;
    for (size_t i = 0; i < costs.size(); ++i) {
      double ti = f * p->phases[kLearn][i];
      for (int ph : {kStartup, kInstall, kLoadData, kStart, kPoweroff}) ti += p->phases[ph][i];
      costs[i] = expected_cost(c.rule, c.hourly_price, std::min(ti, stop_s));
      sum += costs[i];
    }
    if (costs.empty()) return {0, 0};
    return {sum / static_cast<double>(costs.size()), quantile_sorted(costs, 0.9)};
  } else {
    const auto& prior = phase_prior(c.cfg.provider);
    t = prior.startup + (c.cfg.image_cached ? prior.install_cached : prior.install_cold) + prior.load_data +
        prior.start + prior.poweroff + req.unexplored_probe_s;
  }
  const double e = expected_cost(c.rule, c.hourly_price, t);
  return {e, e};
}

// The most seconds of t_sum that cost at most `money` under c's rule (0 when not even a moment does), less a
// millisecond.
double seconds_within(const PlanCandidate& c, double money) {
  if (!(money < kInfinity)) return 0;
  if (expected_cost(c.rule, c.hourly_price, 1e-9) > money) return 0;
  double lo = 0, hi = 1;
  while (hi < 1e9 && expected_cost(c.rule, c.hourly_price, hi) <= money) lo = hi, hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected_cost(c.rule, c.hourly_price, mid) <= money ? lo : hi) = mid;
  }
  // A millisecond short of the step the bisection found, so that phases summing to the limit with rounding
  // error do not bill the next step.
  return std::max(0.0, lo - 1e-3);
}

// Per-draw value in money of one plan run (times repetitions), and whether the draw satisfies the constraint.
void score_draws(Scored& s, const PlanCandidate& c, const SearchRequest& req) {
  const auto& plan = req.plan;
  const auto& t = s.pred->t_sum;
  s.value.resize(t.size());
  s.valid.resize(t.size());
  double sum = 0, sum_cost = 0;
  size_t ok = 0;
  std::mt19937_64 rng(plan.seed ^ std::hash<std::string>{}(c.cfg.config));  // a spot candidate's interruptions
  for (size_t i = 0; i < t.size(); ++i) {
    const RunDraw run = draw_run(c, *s.pred, i, rng);
    double cost = run.cost * plan.repetitions;
    double hours_value = run.wall / 3600.0 * req.value_per_hour;
    s.value[i] = time_valued(plan) ? hours_value : cost;
    s.valid[i] = plan.objective == Objective::cost_under_deadline ? run.wall <= *plan.deadline_s && !run.failed
                 : plan.objective == Objective::budget             ? cost <= *plan.budget
                                                                   : true;
    sum += s.value[i];
    sum_cost += cost;
    ok += s.valid[i];
  }
  const double n = static_cast<double>(t.size());
  s.mean_value = sum / n;
  s.mean_cost = sum_cost / n;
  if (plan.objective == Objective::cost_under_deadline) s.feasible = ok / n >= plan.deadline_confidence;
  if (plan.objective == Objective::budget) s.feasible = sum_cost / n <= *plan.budget;
}

// A config measured by full runs is worth what those runs cost (their mean billed cost, or hours valued), not the
// mean of its draws: near a billing step the draws' noise would price it a step dearer than any run of it was,
// and the search would then prefer a config that measured dearer. Partial runs and spot candidates keep the
// model's value (a probe covers part of the workload; a measured run says nothing of interruptions).
void use_measured_value(Scored& s, const PlanCandidate& c, std::span<const MeasuredRun> history,
                        const SearchRequest& req) {
  if (c.spot) return;
  double value = 0, cost_sum = 0;
  int runs = 0;
  for (const auto& r : history) {
    if (r.cfg.config != c.cfg.config) continue;
    if (r.images_done || r.epochs_done) return;
    const double t = t_sum_of(r.phases);
    const double run_cost = expected_cost(c.rule, c.hourly_price, t) * req.plan.repetitions;
    value += time_valued(req.plan) ? t / 3600.0 * req.value_per_hour : run_cost;
    cost_sum += run_cost;
    ++runs;
  }
  if (runs == 0) return;
  s.mean_value = value / runs;
  s.mean_cost = cost_sum / runs;
}

// The value of the best config measured whole and feasible (kInfinity when none).
double measured_incumbent(const std::vector<Scored>& scored) {
  double best = kInfinity;
  for (const auto& s : scored)
    if (s.probed && s.pred && !s.prior && s.feasible) best = std::min(best, s.mean_value);
  return best;
}

// What a probe must improve on: the best measured config, else the best predicted feasible one, else the worst.
double incumbent_of(const std::vector<Scored>& scored) {
  if (const double measured = measured_incumbent(scored); measured < kInfinity) return measured;
  double best_any = kInfinity, worst = 0;
  for (const auto& s : scored) {
    if (!s.pred || s.prior) continue;
    worst = std::max(worst, s.mean_value);
    if (s.feasible) best_any = std::min(best_any, s.mean_value);
  }
  return best_any < kInfinity ? best_any : worst;
}

double expected_improvement(const Scored& s, double incumbent) {
  double sum = 0;
  for (size_t i = 0; i < s.value.size(); ++i)
    if (s.valid[i]) sum += std::max(0.0, incumbent - s.value[i]);
  return sum / static_cast<double>(s.value.size());
}

std::string money(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string percent(double share) { return money(100 * share) + "%"; }

// Where to explore a group that nothing predicts yet, as an index into its configs sorted by count. For cost,
// the second smallest: with prices that grow with size the cheapest run sits among the smallest configs, and
// one step up also hedges against the smallest being slow per core. For cost under a deadline, the lower
// third (the deadline rules out the slowest). For time and budget, the middle (the scaling sweet spot).
// Chosen on bench/planner (seed 1: second smallest 93% within 5% after 3 probes, lower third 91.5%, middle
// 89.5%) and checked on other seeds.
size_t explore_index(size_t members, Objective objective) {
  if (objective == Objective::cost) return std::min<size_t>(1, members - 1);
  if (objective == Objective::cost_under_deadline) return (members - 1) / 3;
  return (members - 1) / 2;
}

// The exploration probe of the cheapest-to-probe group that nothing predicts yet.
std::optional<Choice> pick_exploration(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                       const std::set<std::string>& excluded, Objective objective) {
  std::map<std::string, std::vector<const Scored*>> groups;
  for (const auto& s : scored)
    if (!s.pred && !excluded.contains(candidates[s.index].cfg.config))
      groups[Predictor::group_of(candidates[s.index].cfg)].push_back(&s);
  std::optional<Choice> best;
  for (auto& [group, members] : groups) {
    std::sort(members.begin(), members.end(), [&](const Scored* a, const Scored* b) {
      return Predictor::count_of(candidates[a->index].cfg) < Predictor::count_of(candidates[b->index].cfg);
    });
    const Scored* mid = members[explore_index(members.size(), objective)];
    if (!best || mid->probe_cost < best->probe_cost)
      best = Choice{mid->index, "explore: no run predicts " + group, 0, mid->probe_cost, true};
  }
  return best;
}

// A prior for a config whose group nothing has measured yet, so that its probe is weighed like any other:
// it does the same work as the measured configs (learn seconds × cores × nodes, Predictor::count_of) spread over
// its own cores and nodes. log(work) is normal around the mean of the measured configs' log work, with their
// spread and at least ln 2 (a factor of 2 either way, p16..p84): no more is assumed of a family never run. Its
// other phases are the measured configs' means. nullopt before anything is measured.
std::optional<Prediction> prior_prediction(const ConfigSpec& cfg, const std::vector<Scored>& scored,
                                           std::span<const PlanCandidate> candidates, const PredictorOptions& opt) {
  std::vector<double> log_work;
  std::array<double, 8> phase_mean{};
  for (const auto& s : scored) {
    if (!s.probed || !s.pred || s.prior) continue;
    const double learn = s.pred->mean(kLearn);
    const double count = Predictor::count_of(candidates[s.index].cfg);
    if (!(learn > 0) || !(count > 0)) continue;
    log_work.push_back(std::log(learn * count));
    for (int ph = 0; ph < 8; ++ph) phase_mean[ph] += s.pred->mean(ph);
  }
  if (log_work.empty()) return std::nullopt;
  const double n = static_cast<double>(log_work.size());
  double mu = 0, var = 0;
  for (double w : log_work) mu += w / n;
  for (double w : log_work) var += (w - mu) * (w - mu) / std::max(1.0, n - 1);
  const double sigma = std::max(std::sqrt(var), std::log(2.0));
  const double count = std::max(1e-9, Predictor::count_of(cfg));
  Prediction p;
  p.basis = "prior: the measured configs' work over " + money(count) + " cores";
  p.log_sd = sigma;
  p.overhead_basis = "prior";
  const size_t draws = static_cast<size_t>(std::max(1, opt.samples));
  std::mt19937_64 rng(opt.seed ^ std::hash<std::string>{}(cfg.config));
  std::normal_distribution<double> z(0, 1);
  for (int ph = 0; ph < 8; ++ph) p.phases[ph].assign(draws, phase_mean[ph] / n);
  p.t_sum.assign(draws, 0);
  for (size_t i = 0; i < draws; ++i) {
    p.phases[kLearn][i] = std::exp(mu + sigma * z(rng)) / count;
    for (int ph = 0; ph < 8; ++ph) p.t_sum[i] += p.phases[ph][i];
  }
  return p;
}

// The probe the budget buys: the unprobed config of the largest net value of information, future_runs × its expected
// improvement on the incumbent (the best measured config) less its expected probe cost, among those whose p90 probe
// cost fits what is left of the budget. `best_any` gets the same over every config, affordable or not. (Ranking the
// affordable ones by saving per unit of probe cost instead, CherryPick's and Spearmint's EI per second, did worse on
// every trace of `bench/planner.sh --totals`: docs/planner.md.)
std::optional<Choice> pick_by_value(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                    const std::set<std::string>& probed, const std::set<std::string>& excluded,
                                    const SearchRequest& req, double budget_left, double discount,
                                    std::optional<Choice>& best_any) {
  const double incumbent = incumbent_of(scored);
  std::optional<Choice> best;
  double best_net = 0, any_net = 0;
  for (const auto& s : scored) {
    const auto& cfg = candidates[s.index].cfg;
    if (!s.pred || probed.contains(cfg.config) || excluded.contains(cfg.config)) continue;
    const double gain = expected_improvement(s, incumbent) * req.future_runs * discount;
    const double net = gain - s.probe_cost;
    Choice c{s.index,
             "expected saving " + money(gain) + " over " + money(req.future_runs) + " planned runs for a probe of " +
                 money(s.probe_cost) + (s.prior ? " (" + s.pred->basis + ")" : ""),
             gain, s.probe_cost, false};
    if (!best_any || net > any_net) any_net = net, best_any = c;
    if (s.probe_cost_p90 > budget_left) continue;
    if (!best || net > best_net) best_net = net, best = c;
  }
  return best;
}

constexpr const char* kWhyPastMemory = "every probe filled its memory";

// Where every probe that reported its memory filled it (MeasuredRun::memory_used at or above kMemoryBound), the
// job's working set lies above all of them: a memory cliff no probe has seen past, whose height the model can only
// guess from its prior. The probe that tells is the cheapest to probe of the configs with more cluster memory than
// any probed (its cost capped where it could no longer beat the best measured config, so it is cheap exactly when
// it would lose), if its p90 fits what is left of the budget. nullopt: some probe's working set fitted, none
// reported its memory, or no such config is left; where there are such configs but none fits the budget,
// `unaffordable` says so, for the stop reason.
std::optional<Choice> probe_past_memory(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                        const std::vector<ProbeStep>& trace, const std::set<std::string>& probed,
                                        const std::set<std::string>& excluded, const SearchRequest& req,
                                        double budget_left, std::string& unaffordable) {
  double probed_memory = 0;
  bool filled = false;
  for (const auto& step : trace) {
    const Scored* tried = scored_of(scored, candidates, step.config);
    if (!tried) continue;
    probed_memory = std::max(probed_memory, candidates[tried->index].cfg.cluster_memory_gib());
    if (!step.memory_used) continue;
    if (*step.memory_used < kMemoryBound) return std::nullopt;
    filled = true;
  }
  if (!filled) return std::nullopt;
  const std::string filled_up_to = std::string(kWhyPastMemory) + " (up to " + money(probed_memory) + " GiB a cluster)";
  const double incumbent = incumbent_of(scored);
  std::optional<Choice> best;
  const Scored* cheapest_unaffordable = nullptr;  // by p90, where none fits the budget
  for (const auto& s : scored) {
    const auto& cfg = candidates[s.index].cfg;
    if (!s.pred || probed.contains(cfg.config) || excluded.contains(cfg.config)) continue;
    if (!(cfg.cluster_memory_gib() > probed_memory)) continue;
    if (s.probe_cost_p90 > budget_left) {
      if (!cheapest_unaffordable || s.probe_cost_p90 < cheapest_unaffordable->probe_cost_p90) cheapest_unaffordable = &s;
      continue;
    }
    if (best && s.probe_cost >= best->probe_cost) continue;
    const double gain = expected_improvement(s, incumbent) * req.future_runs;
    best = Choice{s.index,
                  filled_up_to + ": the working set lies above them all, and this is the cheapest config past them "
                                 "to probe (" + money(s.probe_cost) + ", expected saving " + money(gain) + ")",
                  gain, s.probe_cost, false};
  }
  if (!best && cheapest_unaffordable)
    unaffordable = filled_up_to + ", and no config with more fits the " + money(budget_left) +
                   " left of the budget (the cheapest to probe, " +
                   candidates[cheapest_unaffordable->index].cfg.config + ", may cost " +
                   money(cheapest_unaffordable->probe_cost_p90) + " at p90)";
  return best;
}

// The seconds of t_sum past which a whole run of c can no longer beat `incumbent` (the best measured config's
// value): it has cost more, or taken longer than the incumbent's value in hours, or (cost under a deadline) run
// past the deadline. A probe is stopped there: what it ran bounds the config's learn time, and what it would have
// measured past it could not change the pick. kInfinity: no such point (nothing measured yet, a partial probe).
double stop_loss_s(const PlanCandidate& c, double incumbent, const SearchRequest& req) {
  if (!(incumbent < kInfinity) || probe_fraction(req.probe, req.workload) < 1) return kInfinity;
  const auto& plan = req.plan;
  double s = kInfinity;
  if (time_valued(plan)) {
    if (req.value_per_hour > 0) s = incumbent / req.value_per_hour * 3600;
    if (plan.objective == Objective::budget && plan.budget)
      s = std::min(s, seconds_within(c, *plan.budget / std::max(1, plan.repetitions)));
  } else {
    s = seconds_within(c, incumbent / std::max(1, plan.repetitions));
  }
  if (plan.objective == Objective::cost_under_deadline && plan.deadline_s) s = std::min(s, *plan.deadline_s);
  return s > 0 ? s : kInfinity;
}

// Widens a prediction's learn draws around their log mean by `factor` (the other phases were measured where
// the config's provider ran before, and are left as they are).
void widen(Prediction& p, double factor) {
  if (!(factor > 1)) return;
  auto& learn = p.phases[kLearn];
  const double mean = log_moments(learn).first;
  for (size_t i = 0; i < learn.size(); ++i) {
    if (!(learn[i] > 0)) continue;
    const double widened = std::exp(mean + factor * (std::log(learn[i]) - mean));
    p.t_sum[i] += widened - learn[i];
    learn[i] = widened;
  }
  p.log_sd *= factor;
}

// Every candidate's prediction (the model's, widened by `widening` where the config was not measured, else the
// prior's), its value draws and its probe cost.
std::vector<Scored> score_candidates(const Predictor& predictor, std::span<const PlanCandidate> candidates,
                                     std::span<const MeasuredRun> history, const std::set<std::string>& probed,
                                     const SearchRequest& req, const PredictorOptions& popt, double widening) {
  std::vector<Scored> scored(candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    scored[k].index = k;
    scored[k].probed = probed.contains(candidates[k].cfg.config);
    if (auto p = predictor.predict(candidates[k].cfg)) {
      scored[k].pred = std::move(*p);
      if (!scored[k].probed) widen(*scored[k].pred, widening);
      score_draws(scored[k], candidates[k], req);
      if (scored[k].probed) use_measured_value(scored[k], candidates[k], history, req);
    }
  }
  for (size_t k = 0; k < candidates.size(); ++k) {
    if (!scored[k].pred)
      if (auto p = prior_prediction(candidates[k].cfg, scored, candidates, popt)) {
        scored[k].pred = std::move(*p);
        scored[k].prior = true;
        score_draws(scored[k], candidates[k], req);
      }
  }
  const double incumbent = measured_incumbent(scored);
  for (size_t k = 0; k < candidates.size(); ++k) {
    scored[k].stop_s = stop_loss_s(candidates[k], incumbent, req);
    std::tie(scored[k].probe_cost, scored[k].probe_cost_p90) =
        probe_cost_of(candidates[k], scored[k].pred ? &*scored[k].pred : nullptr, req, scored[k].stop_s);
  }
  return scored;
}

}  // namespace tsum::billing::search_detail
