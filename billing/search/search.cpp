#include "billing/search/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "billing/model/phase_priors.h"

namespace tsum::billing {

using nlohmann::json;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

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
  bool probed = false;            // measured: its prediction comes from its own runs
  bool prior = false;             // its group has no run: predicted by prior_prediction, never picked on it
};

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

// The expected cost of probing c, and its p90 over the prediction's draws (the expectation when none).
std::pair<double, double> probe_cost_of(const PlanCandidate& c, const Prediction* p, const SearchRequest& req) {
  double t = 0;
  if (p) {
    const double f = probe_fraction(req.probe, req.workload);
    std::vector<double> costs(p->t_sum.size());
    double sum = 0;
    for (size_t i = 0; i < costs.size(); ++i) {
      double ti = f * p->phases[kLearn][i];
      for (int ph : {kStartup, kInstall, kLoadData, kStart, kPoweroff}) ti += p->phases[ph][i];
      costs[i] = expected_cost(c.rule, c.hourly_price, ti);
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

double incumbent_of(const std::vector<Scored>& scored, const std::set<std::string>& probed,
                    std::span<const PlanCandidate> candidates) {
  double best_probed = kInfinity, best_any = kInfinity, worst = 0;
  for (const auto& s : scored) {
    if (!s.pred || s.prior) continue;
    worst = std::max(worst, s.mean_value);
    if (!s.feasible) continue;
    best_any = std::min(best_any, s.mean_value);
    if (probed.contains(candidates[s.index].cfg.config)) best_probed = std::min(best_probed, s.mean_value);
  }
  if (best_probed < kInfinity) return best_probed;
  if (best_any < kInfinity) return best_any;
  return worst;
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

struct Choice {
  size_t index = 0;
  std::string why;
  double gain = 0;
  double probe_cost = 0;
  bool explore = false;
};

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
  const double incumbent = incumbent_of(scored, probed, candidates);
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

// The resource model's prior on a job's working set spans the memory of the configs being searched.
PredictorOptions with_memory_range(PredictorOptions opt, std::span<const PlanCandidate> candidates) {
  double lo = kInfinity, hi = 0;
  for (const auto& c : candidates)
    if (c.cfg.memory_gib > 0) {
      const double m = c.cfg.memory_gib * std::max(1, c.cfg.nodes);
      lo = std::min(lo, m), hi = std::max(hi, m);
    }
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

}  // namespace

namespace {

const Scored* scored_of(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                        const std::string& config) {
  for (const auto& s : scored)
    if (candidates[s.index].cfg.config == config) return &s;
  return nullptr;
}

}  // namespace

double binomial_tail(int n, int k, double p) {
  double sum = 0;
  for (int x = std::max(0, k); x <= n; ++x) {
    double c = 1;
    for (int i = 0; i < x; ++i) c = c * (n - i) / (i + 1);
    sum += c * std::pow(p, x) * std::pow(1 - p, n - x);
  }
  return sum;
}

bool ModelCheck::fails(int probes, int outside) {
  return probes >= 3 && binomial_tail(probes, outside, 0.2) < 0.01;
}

double ModelCheck::widening() const {
  double sum = 0;
  for (double z2 : z_squared) sum += z2;
  const double n = static_cast<double>(z_squared.size());
  return std::clamp(std::sqrt((2 + sum) / (2 + n)), 1.0, kMaxWidening);
}

double poisson_binomial_cdf(std::span<const double> p, int k) {
  if (k < 0) return 0;
  std::vector<double> dist(p.size() + 1, 0.0);  // dist[x] = P(x successes so far)
  dist[0] = 1;
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t x = i + 1; x > 0; --x) dist[x] = dist[x] * (1 - p[i]) + dist[x - 1] * p[i];
    dist[0] *= 1 - p[i];
  }
  double sum = 0;
  for (int x = 0; x <= k && x < static_cast<int>(dist.size()); ++x) sum += dist[x];
  return std::min(1.0, sum);
}

double ImprovementCheck::discount() const {
  const double n = static_cast<double>(predicted.size());
  if (n == 0 || !(promised > 0)) return 1;
  return (n * delivered / promised + 1) / (n + 1);
}

double ImprovementCheck::expected_improved() const {
  double sum = 0;
  for (double p : predicted) sum += p;
  return sum;
}

bool ImprovementCheck::fails(std::span<const double> predicted, int improved) {
  return predicted.size() >= 3 && poisson_binomial_cdf(predicted, improved) < 0.01;
}

namespace {

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

// What the search expects of a probe before it runs, to check the model with afterwards.
struct Expectation {
  std::string config;
  std::optional<CandidateBand> band;  // the model's p10..p90 (not the prior's)
  double p_improve = 0;               // P(value < incumbent)
  double incumbent = 0;
  double promised = 0;                // future_runs × E[max(0, incumbent - value)]
  double log_learn_mean = 0, log_learn_sd = 0;  // of the model's learn draws (sd 0: no model prediction)
};

// The mean and sd of the logs of positive draws.
std::pair<double, double> log_moments(const std::vector<double>& draws) {
  double n = 0, sum = 0, sq = 0;
  for (double x : draws)
    if (x > 0) n += 1, sum += std::log(x), sq += std::log(x) * std::log(x);
  if (n < 2) return {n ? sum : 0, 0};
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sq / n - mean * mean))};
}

std::optional<Expectation> expectation_of(const Scored& s, std::span<const PlanCandidate> candidates,
                                          const std::vector<Scored>& scored, const std::set<std::string>& probed,
                                          double future_runs) {
  if (!s.pred || s.probed) return std::nullopt;
  Expectation e;
  e.config = candidates[s.index].cfg.config;
  if (!s.prior) {
    e.band = CandidateBand{e.config, quantile_of(s, 0.1), s.mean_value, quantile_of(s, 0.9), false, s.pred->basis};
    std::tie(e.log_learn_mean, e.log_learn_sd) = log_moments(s.pred->phases[kLearn]);
  }
  e.incumbent = incumbent_of(scored, probed, candidates);
  double below = 0;
  for (size_t i = 0; i < s.value.size(); ++i) below += s.valid[i] && s.value[i] < e.incumbent;
  e.p_improve = below / static_cast<double>(std::max<size_t>(1, s.value.size()));
  e.promised = future_runs * expected_improvement(s, e.incumbent);
  return e;
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
    std::tie(scored[k].probe_cost, scored[k].probe_cost_p90) =
        probe_cost_of(candidates[k], scored[k].pred ? &*scored[k].pred : nullptr, req);
  }
  return scored;
}

// The last probe against what was expected of it: in its band or not, improving on the incumbent or not, and by
// how much against what it promised.
void judge_last_probe(const Expectation& e, const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                      const SearchRequest& req, SearchResult& out) {
  const Scored* s = scored_of(scored, candidates, e.config);
  if (!s || !s->pred || s->prior) return;
  if (e.band) {
    out.model_check.probes += 1;
    out.model_check.outside += s->mean_value < e.band->p10 || s->mean_value > e.band->p90;
    const double measured = s->pred->mean(kLearn);
    if (e.log_learn_sd > 0 && measured > 0) {
      const double z = (std::log(measured) - e.log_learn_mean) / e.log_learn_sd;
      if (std::isfinite(z)) out.model_check.z_squared.push_back(z * z);
    }
  }
  out.improvement_check.predicted.push_back(e.p_improve);
  out.improvement_check.improved += s->mean_value < e.incumbent;
  out.improvement_check.promised += e.promised;
  out.improvement_check.delivered += req.future_runs * std::max(0.0, e.incumbent - s->mean_value);
}

// Why the search no longer trusts its model, if it does not: its probes missed their bands, or improved far less
// often than predicted. From then on it explores without the model (explore_freely) instead of stopping: doubt
// that stopped the search locked in a bad incumbent exactly when the model was wrong (issue 50).
std::optional<std::string> doubt(SearchResult& out) {
  const auto& mc = out.model_check;
  const auto& ic = out.improvement_check;
  if (ModelCheck::fails(mc.probes, mc.outside)) {
    out.model_check.explains = false;
    return "the model does not explain the measurements: " + std::to_string(mc.outside) + " of " +
           std::to_string(mc.probes) + " probes fell outside the p10-p90 band predicted for them";
  }
  if (ImprovementCheck::fails(ic.predicted, ic.improved)) {
    out.improvement_check.explains = false;
    return "the model is too hopeful: " + std::to_string(ic.improved) + " of " + std::to_string(ic.predicted.size()) +
           " probes improved on the best measured config, where " + money(ic.expected_improved()) + " were expected";
  }
  return std::nullopt;
}

// Where a config sits among the candidates, for spreading probes without a model: its family, and the logs of
// its cores (or GPUs) per machine, its nodes and its memory, each over its range among the candidates.
struct Place {
  std::string family;
  std::array<double, 3> x{};
};

std::vector<Place> places_of(std::span<const PlanCandidate> candidates) {
  std::vector<Place> out;
  std::array<double, 3> lo, hi;
  lo.fill(kInfinity), hi.fill(-kInfinity);
  for (const auto& c : candidates) {
    const auto& cfg = c.cfg;
    Place p{Predictor::group_of(cfg),
            {std::log2(std::max(1, cfg.gpus > 0 ? cfg.gpus : cfg.cores)), std::log2(std::max(1, cfg.nodes)),
             cfg.memory_gib > 0 ? std::log2(cfg.memory_gib * std::max(1, cfg.nodes)) : 0.0}};
    for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], p.x[d]), hi[d] = std::max(hi[d], p.x[d]);
    out.push_back(std::move(p));
  }
  for (auto& p : out)
    for (int d = 0; d < 3; ++d) p.x[d] = hi[d] > lo[d] ? (p.x[d] - lo[d]) / (hi[d] - lo[d]) : 0.0;
  return out;
}

// Squared distance: another family counts as a whole range apart.
double distance2(const Place& a, const Place& b) {
  double d = a.family == b.family ? 0.0 : 1.0;
  for (int i = 0; i < 3; ++i) d += (a.x[i] - b.x[i]) * (a.x[i] - b.x[i]);
  return d;
}

// E[max(0, incumbent - V)] for V log-normal with log mean mu and log sd sigma.
double lognormal_improvement(double incumbent, double mu, double sigma) {
  if (!(incumbent > 0)) return 0;
  const auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double d = (std::log(incumbent) - mu) / sigma;
  return incumbent * phi(d) - std::exp(mu + 0.5 * sigma * sigma) * phi(d - sigma);
}

// A probe chosen without the model: among the configs whose p90 probe cost fits the budget, the one farthest from
// every config tried (maximin over family, cores, nodes and memory), each distance weighed against how much dearer
// its probe is than the cheapest one's. What it may save is also judged without the model: the measured configs'
// values, log-normal (their log mean and spread, at least a factor of 2), say what a config like them is worth
// against the incumbent.
std::optional<Choice> explore_freely(const std::vector<Scored>& scored, std::span<const PlanCandidate> candidates,
                                     const std::vector<Place>& places, const std::set<std::string>& probed,
                                     const std::set<std::string>& excluded, const SearchRequest& req,
                                     double budget_left, double& saving) {
  std::vector<double> logs;
  for (const auto& s : scored)
    if (s.probed && s.pred && s.mean_value > 0) logs.push_back(std::log(s.mean_value));
  const double n = static_cast<double>(logs.size());
  double mu = 0, var = 0;
  for (double x : logs) mu += x / std::max(1.0, n);
  for (double x : logs) var += (x - mu) * (x - mu) / std::max(1.0, n - 1);
  saving = req.future_runs *
           lognormal_improvement(incumbent_of(scored, probed, candidates), mu, std::max(std::sqrt(var), std::log(2.0)));
  std::vector<const Scored*> open;  // affordable and never tried
  std::vector<size_t> tried;        // probed, or whose probe failed
  double cheapest = kInfinity;
  for (const auto& s : scored) {
    const auto& cfg = candidates[s.index].cfg;
    if (probed.contains(cfg.config) || excluded.contains(cfg.config)) tried.push_back(s.index);
    else if (s.probe_cost_p90 <= budget_left) open.push_back(&s), cheapest = std::min(cheapest, s.probe_cost);
  }
  std::optional<Choice> best;
  double best_score = -1;
  for (const Scored* open_one : open) {
    const Scored& s = *open_one;
    double nearest = kInfinity;
    for (size_t t : tried) nearest = std::min(nearest, distance2(places[s.index], places[t]));
    const double score = std::sqrt(nearest) * std::sqrt(cheapest / std::max(s.probe_cost, 1e-12));
    if (score > best_score)
      best_score = score,
      best = Choice{s.index,
                    "explore without the model: the config least like any probed (family, cores, nodes, memory) for "
                    "its probe cost; one like those measured is expected to save " + money(saving) + " over " +
                        money(req.future_runs) + " planned runs for a probe of " + money(s.probe_cost),
                    saving, s.probe_cost, true};
  }
  return best;
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
  if (!out.doubt.empty()) {
    double saving = 0;
    auto free = explore_freely(scored, candidates, places, probed, excluded, req, budget_left, saving);
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
  if (best_any->gain <= best_any->probe_cost)
    return stop_with("no probe is worth its cost: the best, " + candidates[best_any->index].cfg.config +
                     ", is expected to save " + money(best_any->gain) + " over the " + money(req.future_runs) +
                     " planned runs for a probe of " + money(best_any->probe_cost));
  if (choice && choice->gain > choice->probe_cost) return probe_next(*choice);
  // What the budget could still buy, and why it is not bought: the affordable probe worth most saves less than it
  // costs, or none fits.
  const Scored& b = scored[best_any->index];
  const std::string affordable =
      choice ? "; the affordable probe worth most, " + candidates[choice->index].cfg.config + ", is expected to save " +
                   money(choice->gain) + " for a probe of " + money(choice->probe_cost) + ": not worth it"
             : "; no other probe's p90 cost fits the " + money(budget_left) + " left";
  return stop_with(
          "the exploration budget is spent: spent " + money(out.spent) + ", budget " + money(out.budget) +
              (req.probe_budget ? "" : " (the first measurement's " + money(entry) + " + " +
                                           percent(req.budget_share.value_or(kDefaultBudgetShare)) +
                                           " of the planned runs at the first measured config)") +
              "; the probe worth most, " + candidates[b.index].cfg.config + " (expected saving " +
              money(best_any->gain) + "), may cost " + money(b.probe_cost_p90) + " (p90)" + affordable,
          !req.probe_budget);
}

// Runs the chosen probe with the seconds the budget leaves it and records what it cost; a run that measured the
// config joins the history. false: it failed, and measured nothing.
bool run_probe(const PlanCandidate& cand, double budget_left, const ProbeFn& probe, const SearchRequest& req,
               ProbeStep& step, SearchResult& out, std::vector<MeasuredRun>& history,
               std::vector<MeasuredRun>& unfinished) {
  ProbeSpec spec = req.probe;
  spec.max_s = budget_left < kInfinity ? seconds_within(cand, budget_left) : 0;
  auto run = probe(cand, spec);
  if (run && spec.max_s > 0 && t_sum_of(run->phases) > spec.max_s) {
    // It ran past its limit (a caller that stops it there reports it failed itself): it measures nothing, and
    // what it billed is spent all the same.
    run->failed = true;
    run->failure = "ran past the " + format_duration(spec.max_s) + " the exploration budget left it";
  }
  if (run) {
    step.t_sum = t_sum_of(run->phases);
    step.memory_used = run->memory_used;
    step.probe_cost = expected_cost(cand.rule, cand.hourly_price, step.t_sum);
    out.spent += step.probe_cost;
  }
  if (!run || run->failed) {
    step.error = run ? run->failure : run.error().detail;
    if (run) run->cfg = cand.cfg, run->failed = true, unfinished.push_back(std::move(*run));
    return false;
  }
  run->cfg = cand.cfg;
  history.push_back(std::move(*run));
  return true;
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
    expected = expectation_of(scored[choice.index], candidates, scored, probed, req.future_runs);
    const bool measured = run_probe(cand, out.budget - out.spent, probe, req, step, out, history, unfinished);
    if (!measured) excluded.insert(cand.cfg.config), expected.reset();
    out.trace.push_back(std::move(step));
  }
  if (history.empty() && !out.trace.empty())
    return make_error(Code::unavailable, "search: nothing was measured: " + std::to_string(out.trace.size()) +
                                             " probes, every one failed (" + out.stop_reason + ")");
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
  out.history = std::move(history);
  return out;
}

namespace {
json progress_json(const SearchResult& r) {
  json trace = json::array();
  for (const auto& s : r.trace) {
    json j = {{"config", s.config},        {"why", s.why},         {"expected_gain", s.expected_gain},
              {"expected_probe_cost", s.expected_probe_cost}, {"probe_cost", s.probe_cost}, {"t_sum", s.t_sum}};
    if (!s.error.empty()) j["error"] = s.error;
    if (s.memory_used) j["memory_used"] = *s.memory_used;
    trace.push_back(std::move(j));
  }
  json rounds = json::array();
  for (const auto& rd : r.rounds) {
    json bands = json::array();
    for (const auto& b : rd.bands)
      bands.push_back({{"config", b.config}, {"p10", b.p10}, {"mean", b.mean}, {"p90", b.p90}, {"probed", b.probed},
                       {"basis", b.basis}});
    json round = {{"probes", rd.probes},     {"pick", rd.pick},       {"pick_value", rd.pick_value},
                  {"p_within", rd.p_within}, {"pick_measured", rd.pick_measured}, {"predicted", rd.predicted},
                  {"bands", std::move(bands)}};
    if (!rd.best_measured.empty())
      round["best_measured"] = rd.best_measured, round["p_beats_measured"] = rd.p_beats_measured;
    rounds.push_back(std::move(round));
  }
  return {{"trace", std::move(trace)}, {"rounds", std::move(rounds)}, {"tolerance", r.tolerance}, {"spent", r.spent},
          {"budget", std::isfinite(r.budget) ? json(r.budget) : json(nullptr)}};
}
}  // namespace

json search_progress_json(const SearchResult& r, const ProbeStep& next) {
  json out = progress_json(r);
  out["next"] = {{"config", next.config}, {"why", next.why}, {"expected_probe_cost", next.expected_probe_cost}};
  return out;
}

json search_to_json(const SearchResult& r) {
  json out = progress_json(r);
  json plan = plan_to_json(r.plan);
  out["recommendation"] = plan["ranked"].empty() ? json(nullptr) : plan["ranked"][0];
  if (!out["recommendation"].is_null()) {
    auto& rec = out["recommendation"];
    rec["measured"] = r.measured;
    rec["why"] = r.recommendation_basis;
    if (!r.rounds.empty())
      for (const auto& b : r.rounds.back().bands)
        if (b.config == rec["config"]) rec["band"] = {{"p10", b.p10}, {"mean", b.mean}, {"p90", b.p90}};
  }
  out["p_within"] = r.p_within;
  out["model_check"] = {{"probes", r.model_check.probes}, {"outside_band", r.model_check.outside},
                        {"explains", r.model_check.explains}};
  out["improvement_check"] = {{"probes", r.improvement_check.predicted.size()},
                              {"improved", r.improvement_check.improved},
                              {"expected_improved", r.improvement_check.expected_improved()},
                              {"explains", r.improvement_check.explains}};
  // What the next probe would have been worth when it stopped, and the budget it had.
  out["expected_saving"] = r.expected_saving;
  out["next_probe_cost"] = r.expected_probe_cost;
  out["stop_reason"] = r.stop_reason;
  out["doubt"] = r.doubt;
  out["plan"] = std::move(plan);
  return out;
}

}  // namespace tsum::billing
